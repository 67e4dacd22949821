package engine

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A turn's context ends at its deadline whether or not anything waits on
// it, names the cause a visit's failure is classified by, and follows its
// parent; a context made under it (the budget's) sees both.
func TestTurnContext(t *testing.T) {
	t.Run("deadline, never armed", func(t *testing.T) {
		tc := newTurnContext(context.Background(), time.Now().Add(20*time.Millisecond))
		defer tc.release()
		if tc.Err() != nil || tc.cause() != nil {
			t.Fatalf("before the deadline: %v %v", tc.Err(), tc.cause())
		}
		time.Sleep(30 * time.Millisecond)
		if !errors.Is(tc.Err(), context.DeadlineExceeded) || !errors.Is(tc.cause(), errTimeout) {
			t.Fatalf("after the deadline: %v %v", tc.Err(), tc.cause())
		}
		if tc.armed.Load() != nil {
			t.Fatal("Err armed a timer")
		}
	})
	t.Run("deadline, armed", func(t *testing.T) {
		tc := newTurnContext(context.Background(), time.Now().Add(20*time.Millisecond))
		defer tc.release()
		select {
		case <-tc.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("Done was not closed at the deadline")
		}
		if !errors.Is(tc.Err(), context.DeadlineExceeded) || !errors.Is(context.Cause(tc), errTimeout) || !errors.Is(tc.cause(), errTimeout) {
			t.Fatalf("%v %v %v", tc.Err(), context.Cause(tc), tc.cause())
		}
	})
	for _, armed := range []bool{false, true} {
		t.Run("parent stopped, armed="+map[bool]string{false: "no", true: "yes"}[armed], func(t *testing.T) {
			parent, stop := context.WithCancelCause(context.Background())
			tc := newTurnContext(parent, time.Now().Add(time.Hour))
			defer tc.release()
			if armed {
				_ = tc.Done()
			}
			stop(ErrStopped)
			if armed {
				<-tc.Done()
			}
			if !errors.Is(tc.Err(), context.Canceled) || !errors.Is(tc.cause(), ErrStopped) {
				t.Fatalf("%v %v", tc.Err(), tc.cause())
			}
		})
	}
	t.Run("a budget's context under it", func(t *testing.T) {
		tc := newTurnContext(context.Background(), time.Now().Add(20*time.Millisecond))
		defer tc.release()
		bctx, stop := context.WithCancelCause(tc)
		defer stop(nil)
		<-bctx.Done()
		if !errors.Is(context.Cause(bctx), errTimeout) {
			t.Fatalf("the deadline reached the budget's context as %v", context.Cause(bctx))
		}
		tc2 := newTurnContext(context.Background(), time.Now().Add(time.Hour))
		defer tc2.release()
		b2, stop2 := context.WithCancelCause(tc2)
		stop2(errBudget)
		if !errors.Is(context.Cause(b2), errBudget) || tc2.Err() != nil {
			t.Fatalf("the budget's stop: %v, turn: %v", context.Cause(b2), tc2.Err())
		}
	})
}
