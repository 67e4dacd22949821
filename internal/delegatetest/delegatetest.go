// Package delegatetest is a scripted delegation socket for driver tests:
// it answers every engine.DelegateRequest with a reply the test computes
// and records the calls, so a driver's delegate tool is tested end to end
// without the host.
package delegatetest

import (
	"bufio"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/flowrun/flow/engine"
)

// Server is a running fake delegation socket.
type Server struct {
	socket string
	ln     net.Listener
	answer func(engine.DelegateRequest) engine.DelegateReply
	wg     sync.WaitGroup

	mu    sync.Mutex
	calls []engine.DelegateRequest
}

// Start listens on a Unix socket in a short temporary directory (a socket
// path has a small length limit, which t.TempDir's can pass) and answers
// each request with answer's reply. It is closed when the test ends.
func Start(t testing.TB, answer func(engine.DelegateRequest) engine.DelegateReply) *Server {
	t.Helper()
	dir, err := os.MkdirTemp("", "dlg")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{socket: filepath.Join(dir, "d.sock"), answer: answer}
	s.ln, err = net.Listen("unix", s.socket)
	if err != nil {
		os.RemoveAll(dir)
		t.Fatal(err)
	}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(func() {
		s.ln.Close()
		s.wg.Wait()
		os.RemoveAll(dir)
	})
	return s
}

// Socket is the path to dial.
func (s *Server) Socket() string { return s.socket }

// Calls returns the requests received so far, in order.
func (s *Server) Calls() []engine.DelegateRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]engine.DelegateRequest(nil), s.calls...)
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer conn.Close()
			sc := bufio.NewScanner(conn)
			sc.Buffer(make([]byte, 64<<10), 16<<20)
			if !sc.Scan() || !sc.Scan() { //nolint:staticcheck // SA4000: two reads, the token's line, then the request's
				return
			}
			var req engine.DelegateRequest
			if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
				return
			}
			s.mu.Lock()
			s.calls = append(s.calls, req)
			s.mu.Unlock()
			b, _ := json.Marshal(s.answer(req))
			_, _ = conn.Write(append(b, '\n'))
		}()
	}
}
