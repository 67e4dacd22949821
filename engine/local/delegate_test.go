package local_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/local"
	"github.com/flowrun/flow/steps/delegate"
)

// TestDelegationSocket: one socket serves every turn by its token; a run
// directory whose path is too long for a socket gets one under the
// temporary directory; a call withdrawn by its caller ends its handler's
// ctx; closing a turn ends its calls, and closing the server removes the
// socket.
func TestDelegationSocket(t *testing.T) {
	long := filepath.Join(t.TempDir(), strings.Repeat("d", 120))
	if err := os.MkdirAll(long, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{t.TempDir(), long} {
		srv, closeSrv := local.DelegatesWith([]string{"/bin/flow", "mcp-delegate"})(dir)
		ctx := context.Background()
		withdrawn := make(chan struct{})
		d, closeTurn, err := srv.Serve(ctx, "lead", func(ctx context.Context, req engine.DelegateRequest) engine.DelegateReply {
			if req.Task == "hang" {
				<-ctx.Done()
				close(withdrawn)
				return engine.DelegateReply{Error: "withdrawn"}
			}
			return engine.DelegateReply{Answer: req.Agent + " did " + req.Task}
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Socket) > 100 {
			t.Errorf("the socket's path is %d bytes: %s", len(d.Socket), d.Socket)
		}
		if strings.Join(d.Server, " ") != "/bin/flow mcp-delegate" || d.Token == "" {
			t.Errorf("delegation: %+v", d)
		}
		reply, err := delegate.Call(ctx, d.Socket, d.Token, "scout", "look")
		if err != nil || reply.Answer != "scout did look" {
			t.Errorf("call = %+v, %v", reply, err)
		}
		reply, err = delegate.Call(ctx, d.Socket, "not-a-token", "scout", "look")
		if err != nil || !strings.Contains(reply.Error, "token") {
			t.Errorf("a call with another token = %+v, %v", reply, err)
		}
		cctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			_, err := delegate.Call(cctx, d.Socket, d.Token, "scout", "hang")
			done <- err
		}()
		time.Sleep(50 * time.Millisecond)
		cancel()
		select {
		case <-withdrawn:
		case <-time.After(5 * time.Second):
			t.Fatal("a withdrawn call's handler went on")
		}
		<-done //nolint:errcheck // waits for the goroutine to end; its error is not this check
		// A call in flight when the turn ends is ended with it.
		withdrawn = make(chan struct{})
		go func() {
			_, err := delegate.Call(ctx, d.Socket, d.Token, "scout", "hang")
			done <- err
		}()
		time.Sleep(50 * time.Millisecond)
		closeTurn()
		select {
		case <-withdrawn:
		default:
			t.Error("closing the turn returned before its call ended")
		}
		<-done //nolint:errcheck // waits for the goroutine to end; its error is not this check
		reply, err = delegate.Call(ctx, d.Socket, d.Token, "scout", "look")
		if err != nil || reply.Error == "" {
			t.Errorf("a call after the turn ended = %+v, %v", reply, err)
		}
		closeSrv()
		if _, err := os.Stat(d.Socket); !os.IsNotExist(err) {
			t.Errorf("the socket is left after the server closed: %v", err)
		}
	}
}
