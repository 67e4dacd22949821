package temporal

import (
	"context"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/flowrun/flow/engine"
)

// delegMemoWorkflow opens one turn's delegation whose handler is a child
// that takes a minute, keeps the turn open for an hour, and returns how
// many children the handler started.
func delegMemoWorkflow(ctx workflow.Context) (int, error) {
	d, err := newDelegates(ctx)
	if err != nil {
		return 0, err
	}
	started := 0
	del, closeFn, _ := d.Serve(withWorkflow(context.Background(), ctx), "lead", func(c context.Context, req engine.DelegateRequest) engine.DelegateReply {
		started++
		n := started
		if err := workflow.Sleep(workflowOf(c), time.Minute); err != nil {
			return engine.DelegateReply{Error: "withdrawn"}
		}
		return engine.DelegateReply{Answer: req.Agent + " did " + req.Task + " as child " + string(rune('0'+n))}
	})
	if err := workflow.SetQueryHandler(ctx, "token", func() (string, error) { return del.Token, nil }); err != nil {
		return 0, err
	}
	_ = workflow.Sleep(ctx, time.Hour)
	closeFn()
	return started, nil
}

// TestDelegateCallsAreAnsweredOncePerKey: a call repeated with the same
// key (a retried parent activity's repeat, sent under another update id)
// is answered by the child the first call started — waited for while it
// runs — and starts no second child; the nth repeat within an attempt is
// a child of its own; a call for an unknown token is refused.
func TestDelegateCallsAreAnsweredOncePerKey(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(delegMemoWorkflow)
	replies := map[string]engine.DelegateReply{}
	send := func(id string, c DelegateCall) {
		env.UpdateWorkflow(UpdateDelegate, id, &testsuite.TestUpdateCallback{
			OnReject: func(err error) { t.Errorf("update %s rejected: %v", id, err) },
			OnComplete: func(v any, err error) {
				if err != nil {
					t.Errorf("update %s: %v", id, err)
					return
				}
				replies[id] = v.(engine.DelegateReply)
			},
		}, c)
	}
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow("token")
		var token string
		if err != nil || v.Get(&token) != nil {
			t.Fatalf("token: %v", err)
		}
		send("first", DelegateCall{Token: token, Agent: "scout", Task: "look at A"})
		send("again", DelegateCall{Token: token, Agent: "scout", Task: "look at A"}) // while the child runs
		send("second", DelegateCall{Token: token, Agent: "scout", Task: "look at A", Nth: 1})
		send("stranger", DelegateCall{Token: "no-such-turn", Agent: "scout", Task: "look at A"})
	}, time.Second)
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow("token")
		var token string
		if err != nil || v.Get(&token) != nil {
			t.Fatalf("token: %v", err)
		}
		send("late", DelegateCall{Token: token, Agent: "scout", Task: "look at A"}) // after the child ended
	}, 10*time.Minute)
	env.ExecuteWorkflow(delegMemoWorkflow)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var started int
	if err := env.GetWorkflowResult(&started); err != nil || started != 2 {
		t.Errorf("children started: %d (%v), want 2", started, err)
	}
	first := replies["first"].Answer
	if first == "" || replies["again"].Answer != first || replies["late"].Answer != first {
		t.Errorf("a repeated call is not answered by the first child: %+v", replies)
	}
	if s := replies["second"].Answer; s == "" || s == first {
		t.Errorf("the call's second repeat should be a child of its own: %+v", replies)
	}
	if replies["stranger"].Error == "" {
		t.Errorf("a call for no open turn was answered: %+v", replies["stranger"])
	}
}
