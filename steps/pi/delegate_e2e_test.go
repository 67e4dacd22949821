package pi

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/internal/clitest"
	"github.com/flowrun/flow/internal/delegatetest"
	"github.com/flowrun/flow/internal/modelserver"
)

// TestE2EDelegate runs turns whose model calls the delegate tool, which
// the real pi serves through flow's extension: two children one after the
// other, with the read-only tools and with none of pi's own; and a call
// the host refuses, whose refusal the model gets as the tool's error.
func TestE2EDelegate(t *testing.T) {
	t.Parallel()
	const token = "tok-pi-0123456789abcdef"
	refuse := func(engine.DelegateRequest) engine.DelegateReply {
		return engine.DelegateReply{Error: "refused: max_children 4 reached; done-scout-4242"}
	}
	for _, tc := range []struct {
		name   string
		tools  []string
		answer func(engine.DelegateRequest) engine.DelegateReply
		calls  []delegatetest.Call
		want   []string // in the model's last request
	}{
		{"read-only", nil, delegatetest.Answer, delegatetest.TwoCalls,
			[]string{"scout did: find the flaky test; done-scout-4242", "tester did: run it a hundred times; done-tester-4242"}},
		{"no-tools", []string{}, delegatetest.Answer, delegatetest.TwoCalls,
			[]string{"scout did: find the flaky test; done-scout-4242", "tester did: run it a hundred times; done-tester-4242"}},
		{"refused", nil, refuse, delegatetest.TwoCalls[:1], []string{"refused: max_children 4 reached"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := delegatetest.Start(t, tc.answer)
			d, s := e2e(t)
			s.Handle(delegatetest.Script("The children answered.", tc.calls...))
			tn := newTurn(t, "Find the flaky test.")
			tn.Agent.Tools = tc.tools
			tn.Delegate = &engine.Delegation{Agents: []string{"scout", "tester"}, Socket: fake.Socket(), Token: token}
			res, err := d.Turn(context.Background(), tn)
			if err != nil || res.Status != engine.Completed || res.Output != "The children answered." {
				t.Fatalf("Turn = %+v, %v", res, err)
			}
			if calls := fake.Calls(); !slices.Equal(calls, delegatetest.TwoCallsMade(token)[:len(tc.calls)]) {
				t.Fatalf("calls = %+v", calls)
			}
			var gen []modelserver.Request
			for _, r := range s.Requests() {
				if r.Path == "/v1/chat/completions" {
					gen = append(gen, r)
				}
			}
			if len(gen) != len(tc.calls)+1 || delegatetest.ToolName(gen[0]) != "delegate" {
				t.Fatalf("%d generation requests, want one per call and the answer's, the tool named delegate", len(gen))
			}
			last := string(gen[len(gen)-1].Body)
			for _, want := range tc.want {
				if !strings.Contains(last, want) {
					t.Errorf("the tool's result %q did not reach the model", want)
				}
			}
			clitest.NoKey(t, tn.Home, token)
		})
	}
}

// TestE2EDelegateCancel cancels a turn while its delegate call waits for
// the child: pi ends, and its call with it.
func TestE2EDelegateCancel(t *testing.T) {
	t.Parallel()
	inCall, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	fake := delegatetest.Start(t, func(engine.DelegateRequest) engine.DelegateReply {
		once.Do(func() { close(inCall) })
		<-release
		return engine.DelegateReply{Answer: "too late"}
	})
	defer close(release)
	d, s := e2e(t)
	s.Handle(delegatetest.Model(`{"agent":"scout","task":"wait"}`, "too late", "never reached"))
	tn := newTurn(t, "Wait for the scout.")
	tn.Delegate = &engine.Delegation{Agents: []string{"scout"}, Socket: fake.Socket(), Token: "tok-pi-cancel-0123456"}
	delegatetest.CancelMidCall(t, inCall, "", func(ctx context.Context) (*engine.TurnResult, error) { return d.Turn(ctx, tn) })
	clitest.NoneLeft(t, tn.RunID)
}
