package pi

import (
	"context"
	"strings"
	"testing"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/internal/clitest"
	"github.com/flowrun/flow/internal/delegatetest"
	"github.com/flowrun/flow/internal/modelserver"
)

// TestE2EDelegate runs a turn whose model calls the delegate tool, which
// the real pi serves through flow's extension: with the read-only tools,
// with none of pi's own, and with a call the host refuses (the model gets
// the refusal as the tool's error result).
func TestE2EDelegate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		tools []string
		reply engine.DelegateReply
	}{
		{"read-only", nil, engine.DelegateReply{Answer: "scout-answer-5120: the flake is in TestRace"}},
		{"no-tools", []string{}, engine.DelegateReply{Answer: "scout-answer-5120: the flake is in TestRace"}},
		{"refused", nil, engine.DelegateReply{Error: "scout-answer-5120: refused: max_children 4 reached"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := delegatetest.Start(t, func(engine.DelegateRequest) engine.DelegateReply { return tc.reply })
			d, s := e2e(t)
			s.Handle(delegatetest.Model(`{"agent":"scout","task":"find the flaky test"}`, "scout-answer-5120", "The scout answered."))
			tn := newTurn(t, "Find the flaky test.")
			tn.Agent.Tools = tc.tools
			const token = "tok-pi-0123456789abcdef"
			tn.Delegate = &engine.Delegation{Agents: []string{"scout", "tester"}, Socket: fake.Socket(), Token: token}
			res, err := d.Turn(context.Background(), tn)
			if err != nil || res.Status != engine.Completed || res.Output != "The scout answered." {
				t.Fatalf("Turn = %+v, %v", res, err)
			}
			calls := fake.Calls()
			if len(calls) != 1 || calls[0] != (engine.DelegateRequest{Token: token, Agent: "scout", Task: "find the flaky test"}) {
				t.Fatalf("calls = %+v", calls)
			}
			var gen []modelserver.Request
			for _, r := range s.Requests() {
				if r.Path == "/v1/chat/completions" {
					gen = append(gen, r)
				}
			}
			if len(gen) < 2 || delegatetest.ToolName(gen[0]) != "delegate" {
				t.Fatalf("%d generation requests, want the call and the answer, the tool named delegate", len(gen))
			}
			last := string(gen[len(gen)-1].Body)
			want := tc.reply.Answer + tc.reply.Error
			if !strings.Contains(last, want) {
				t.Errorf("the tool's result did not reach the model: %.800s", last)
			}
			clitest.NoKey(t, tn.Home, token)
		})
	}
}
