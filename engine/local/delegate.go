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
	"time"

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
// prompts are bounded far below this. It is read only once the call's
// first line, its token, named a turn and the caller is that turn's.
const maxRequest = 8 << 20

// maxTokenLine bounds the first line of a call, its token: what a
// connection can make the server hold before it says who it is.
const maxTokenLine = 64 << 10

// maxConns is the most connections a run's socket holds at once; one
// more is closed as it is accepted. A call holds its connection while its
// child runs, so this is far above any run's calls in flight.
const maxConns = 256

// tokenWait bounds the wait for a connection's token, and bindWait the
// wait for a turn's process to be known (engine.Delegation.Bind) when a
// call comes before the driver has said it.
const (
	tokenWait = 10 * time.Second
	bindWait  = 10 * time.Second
)

// Delegates opens the delegation server of a run in runDir, offering the
// flow binary running now as the MCP server of CLI drivers: the
// Config.Delegates of a run in this process.
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

	mu      sync.Mutex
	ln      net.Listener
	socket  string
	tmp     string // the directory made for the socket when dir's path is too long
	sockDir string // the socket's directory
	turns   map[string]*turnCalls
	conns   map[net.Conn]bool
	closed  bool
	wg      sync.WaitGroup // the accept loop and every connection's goroutine
}

// turnCalls is one turn's delegation: its handler and its calls in flight.
type turnCalls struct {
	handle engine.DelegateHandler
	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	ended  bool
	calls  sync.WaitGroup
	// pid is the turn's process (its group's leader), once the driver
	// bound it; bound is closed then.
	pid   int
	bound chan struct{}
	once  sync.Once
}

// bind ties the turn's calls to the process tree of pid.
func (tc *turnCalls) bind(pid int) {
	tc.once.Do(func() {
		tc.mu.Lock()
		tc.pid = pid
		tc.mu.Unlock()
		close(tc.bound)
	})
}

// callerOf says why the process peer may not make tc's calls, "" when it
// may: flow itself (a driver that calls in-process), or the turn's
// process and its descendants. A call that comes before the driver bound
// the turn's process waits for it.
func (tc *turnCalls) callerOf(peer int) string {
	if peer == 0 || peer == os.Getpid() {
		return ""
	}
	t := time.NewTimer(bindWait)
	defer t.Stop()
	select {
	case <-tc.bound:
	case <-tc.ctx.Done():
		return "refused: the turn ended"
	case <-t.C:
		return "refused: the call does not come from the turn's process"
	}
	tc.mu.Lock()
	leader := tc.pid
	tc.mu.Unlock()
	if !inTree(peer, leader) {
		return "refused: the call does not come from the turn's process or its descendants (a token works only for its own turn)"
	}
	return ""
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
	tc := &turnCalls{handle: handle, ctx: tctx, cancel: cancel, bound: make(chan struct{})}
	s.turns[token] = tc
	return &engine.Delegation{Socket: s.socket, Token: token, Server: append([]string(nil), s.server...), Bind: tc.bind}, func() {
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

// listen opens the socket, mode 0600, in a directory of its own, mode
// 0700: delegate/ in the run directory, or one under the system's
// temporary directory when the run directory's path is too long for a
// socket. Called with s.mu held.
func (s *socketServer) listen() error {
	dir, err := filepath.Abs(filepath.Join(s.dir, "delegate"))
	if err != nil {
		return err
	}
	if len(filepath.Join(dir, "sock")) > maxSunPath {
		if dir, err = os.MkdirTemp("", "flow-dg"); err != nil {
			return err
		}
		s.tmp = dir
	} else if err := privateDir(dir); err != nil {
		return err
	}
	path := filepath.Join(dir, "sock")
	if st, err := os.Lstat(path); err == nil && st.Mode()&os.ModeSocket != 0 {
		_ = os.Remove(path) // a dead engine's, on resume
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("opening the delegation socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return fmt.Errorf("opening the delegation socket: %w", err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false) // close removes it, once
	s.ln, s.socket, s.sockDir = ln, path, dir
	s.wg.Add(1)
	go s.accept(ln)
	return nil
}

// privateDir makes dir, or takes the one a dead engine left, as a
// directory only its owner may enter; anything else there is refused.
func privateDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("opening the delegation socket: %w", err)
	}
	st, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("opening the delegation socket: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("opening the delegation socket: %s is not a directory flow made", dir)
	}
	return os.Chmod(dir, 0o700) // whatever the umask made of it
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
		if len(s.conns) >= maxConns {
			s.mu.Unlock()
			reply(conn, engine.DelegateReply{Error: fmt.Sprintf("refused: the run's delegation socket holds %d connections already", maxConns)})
			conn.Close()
			continue
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
	// The first line is the token alone, read within maxTokenLine and
	// tokenWait; nothing more is read until it names a turn and the
	// caller is that turn's process.
	rd := bufio.NewReaderSize(conn, maxTokenLine)
	_ = conn.SetReadDeadline(time.Now().Add(tokenWait))
	line, err := rd.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			reply(conn, engine.DelegateReply{Error: "refused: a delegate call starts with its token on a line of its own"})
		}
		return
	}
	token := strings.TrimSpace(string(line))
	s.mu.Lock()
	tc := s.turns[token]
	s.mu.Unlock()
	if tc == nil || token == "" {
		reply(conn, engine.DelegateReply{Error: "refused: the token names no turn that may delegate now (its turn ended?)"})
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	if why := tc.callerOf(peerPID(conn)); why != "" {
		reply(conn, engine.DelegateReply{Error: why})
		return
	}
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 0, 64<<10), maxRequest)
	if !sc.Scan() {
		return
	}
	var req engine.DelegateRequest
	if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
		reply(conn, engine.DelegateReply{Error: "a delegate call that is not JSON: " + err.Error()})
		return
	}
	if req.Token != token {
		reply(conn, engine.DelegateReply{Error: "refused: the call names another token than its first line"})
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
	if s.socket != "" {
		// The socket, then its directory if it is empty: nothing else is
		// removed.
		_ = os.Remove(s.socket)
		_ = os.Remove(s.sockDir)
	}
}
