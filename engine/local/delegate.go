package local

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/flowrun/flow/engine"
)

// DelegateCommand is the hidden subcommand of the flow binary that is the
// stdio MCP server a CLI driver starts to offer the delegate tool
// (docs/delegation.md).
const DelegateCommand = "mcp-delegate"

// maxSunPath is the most bytes a Unix socket's path may have here: the
// kernel's sun_path holds 108 with its NUL, macOS's 104.
const maxSunPath = 100

// maxRequest bounds one delegate call's line: a task is a prompt, and
// prompts are bounded far below this.
const maxRequest = 8 << 20

// Delegates opens the delegation server of a run in runDir, offering the
// flow binary running now as the MCP server of CLI drivers: the
// engine.Options.Delegates of a run in this process.
func Delegates(runDir string) (engine.Delegator, func()) {
	return DelegatesWith([]string{self(), DelegateCommand})(runDir)
}

// self is the path this program was started by, absolute: the name it was
// called by is kept (a link named flow stays one), else os.Executable.
func self() string {
	if arg := os.Args[0]; arg != "" {
		if !strings.ContainsRune(arg, filepath.Separator) {
			arg, _ = exec.LookPath(arg)
		}
		if abs, err := filepath.Abs(arg); err == nil && arg != "" {
			if st, err := os.Stat(abs); err == nil && !st.IsDir() {
				return abs
			}
		}
	}
	if exe, err := os.Executable(); err == nil {
		return exe
	}
	return "flow"
}

// DelegatesWith is Delegates with server as the MCP server's argv (a test
// names the flow binary it built).
func DelegatesWith(server []string) func(runDir string) (engine.Delegator, func()) {
	return func(runDir string) (engine.Delegator, func()) {
		s := &socketServer{dir: runDir, server: server, turns: map[string]*turnCalls{}, conns: map[net.Conn]bool{}}
		return s, s.close
	}
}

// socketServer serves every turn's delegate calls of one run on one Unix
// socket, opened at the first turn that delegates; each turn is known by
// a token of its own. Every connection is one call, owned by one
// goroutine, which the server waits for as it closes.
type socketServer struct {
	dir    string
	server []string

	mu     sync.Mutex
	ln     net.Listener
	socket string
	tmp    string // the directory made for the socket when dir's path is too long
	turns  map[string]*turnCalls
	conns  map[net.Conn]bool
	closed bool
	wg     sync.WaitGroup // the accept loop and every connection's goroutine
}

// turnCalls is one turn's delegation: its handler and its calls in flight.
type turnCalls struct {
	handle engine.DelegateHandler
	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	ended  bool
	calls  sync.WaitGroup
}

// Serve gives the turn at visit a token on the run's socket.
func (s *socketServer) Serve(ctx context.Context, visit string, handle engine.DelegateHandler) (*engine.Delegation, func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, nil, errors.New("the run's delegation server is closed")
	}
	if s.ln == nil {
		if err := s.listen(); err != nil {
			return nil, nil, err
		}
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, nil, err
	}
	token := hex.EncodeToString(b[:])
	tctx, cancel := context.WithCancel(ctx)
	tc := &turnCalls{handle: handle, ctx: tctx, cancel: cancel}
	s.turns[token] = tc
	return &engine.Delegation{Socket: s.socket, Token: token, Server: append([]string(nil), s.server...)}, func() {
		s.mu.Lock()
		delete(s.turns, token)
		s.mu.Unlock()
		tc.mu.Lock()
		tc.ended = true
		tc.mu.Unlock()
		cancel()
		tc.calls.Wait()
	}, nil
}

// listen opens the socket in the run directory, or under the system's
// temporary directory when the run directory's path is too long for one.
// Called with s.mu held.
func (s *socketServer) listen() error {
	path, err := filepath.Abs(filepath.Join(s.dir, "delegate.sock"))
	if err != nil {
		return err
	}
	if len(path) > maxSunPath {
		tmp, err := os.MkdirTemp("", "flow-dg")
		if err != nil {
			return err
		}
		s.tmp, path = tmp, filepath.Join(tmp, "s")
	}
	_ = os.Remove(path) // a dead engine's, on resume
	ln, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("opening the delegation socket: %w", err)
	}
	s.ln, s.socket = ln, path
	s.wg.Add(1)
	go s.accept(ln)
	return nil
}

func (s *socketServer) accept(ln net.Listener) {
	defer s.wg.Done()
	for {
		conn, err := ln.Accept()
		if err != nil {
			return // closed
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			conn.Close()
			return
		}
		s.conns[conn] = true
		s.wg.Add(1)
		s.mu.Unlock()
		go s.call(conn)
	}
}

// call reads one request from conn, has its turn's handler decide it, and
// writes the reply. The call is withdrawn when the caller closes conn.
func (s *socketServer) call(conn net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, conn)
		s.mu.Unlock()
		conn.Close()
	}()
	rd := bufio.NewReader(conn)
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 64<<10), maxRequest)
	if !sc.Scan() {
		return
	}
	var req engine.DelegateRequest
	if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
		reply(conn, engine.DelegateReply{Error: "a delegate call that is not JSON: " + err.Error()})
		return
	}
	s.mu.Lock()
	tc := s.turns[req.Token]
	s.mu.Unlock()
	if tc == nil {
		reply(conn, engine.DelegateReply{Error: "refused: the token names no turn that may delegate now (its turn ended?)"})
		return
	}
	tc.mu.Lock()
	if tc.ended {
		tc.mu.Unlock()
		reply(conn, engine.DelegateReply{Error: "refused: the turn ended"})
		return
	}
	tc.calls.Add(1)
	tc.mu.Unlock()
	defer tc.calls.Done()
	ctx, cancel := context.WithCancel(tc.ctx)
	defer cancel()
	// The caller closing its end withdraws the call; this goroutine ends
	// when conn is closed, at the latest as call returns.
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		var b [1]byte
		_, _ = rd.Read(b[:])
		cancel()
	}()
	r := tc.handle(ctx, req)
	reply(conn, r)
	conn.Close()
	<-watched
}

func reply(conn net.Conn, r engine.DelegateReply) {
	b, _ := json.Marshal(r) // plain strings: it always encodes
	_, _ = conn.Write(append(b, '\n'))
}

// close ends the server: the socket, every connection, and their
// goroutines, which it waits for.
func (s *socketServer) close() {
	s.mu.Lock()
	s.closed = true
	ln := s.ln
	for c := range s.conns {
		c.Close()
	}
	for _, tc := range s.turns {
		tc.cancel()
	}
	s.mu.Unlock()
	if ln != nil {
		ln.Close()
	}
	s.wg.Wait()
	if s.tmp != "" {
		_ = os.RemoveAll(s.tmp)
	} else if s.socket != "" {
		_ = os.Remove(s.socket)
	}
}
