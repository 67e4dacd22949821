package devserver

import (
	"errors"
	"net"
	"testing"
)

// A server whose port another listener took ends before it answers, and
// the listener is not taken for it: Start can then try other ports.
func TestAServerOnATakenPortIsNotReady(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0") // held from the start
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	s := Reserve(t)
	s.Address, s.ports[0] = l.Addr().String(), l.Addr().(*net.TCPAddr).Port
	go func() { // another server that takes connections and says nothing
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	if err := s.start(t); !errors.Is(err, errEnded) {
		t.Fatalf("start on a taken port: %v, want %v\n%s", err, errEnded, s.out.String())
	}
}

// Start gives a server that answers.
func TestStartAnswers(t *testing.T) {
	t.Parallel()
	s := Start(t)
	select {
	case <-s.exited:
		t.Fatalf("the server ended:\n%s", s.Log())
	default:
	}
}
