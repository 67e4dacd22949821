package delegatetest

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/flowrun/flow/engine"
)

// CancelMidCall runs turn, waits until its delegate call reached the
// socket (inCall), cancels it with a cause and holds the turn to ending
// aborted with that cause. With a marker (the agent name its MCP server
// carries on its command line), it also holds that server to running
// while the call waits, and to being gone within ten seconds after; a
// driver without an MCP server (pi) gives "".
func CancelMidCall(t *testing.T, inCall <-chan struct{}, marker string, turn func(context.Context) (*engine.TurnResult, error)) {
	t.Helper()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	done := make(chan error, 1)
	var res *engine.TurnResult
	go func() {
		var err error
		res, err = turn(ctx)
		done <- err
	}()
	select {
	case <-inCall:
	case err := <-done:
		t.Fatalf("the turn ended before its call reached the socket: %+v, %v", res, err)
	}
	if marker != "" && len(Processes(marker)) == 0 {
		t.Error("no MCP server is running while its call waits")
	}
	cause := errors.New("the test cancels")
	cancel(cause)
	if err := <-done; !errors.Is(err, cause) || res == nil || res.Status != engine.Aborted {
		t.Errorf("Turn = %+v, %v; want aborted with the cause", res, err)
	}
	if marker == "" {
		return
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(Processes(marker)) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if left := Processes(marker); len(left) > 0 {
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		t.Errorf("the MCP server outlived the turn: %v", left)
	}
}
