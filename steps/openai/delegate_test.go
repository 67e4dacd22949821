package openai

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/internal/delegatetest"
	"github.com/flowrun/flow/internal/modelserver"
	"github.com/flowrun/flow/steps/transcript"
)

// delegating returns a turn against s that may delegate to scout and
// tester through fake.
func delegating(t *testing.T, s *modelserver.Server, fake *delegatetest.Server) *engine.Turn {
	t.Helper()
	tn := turn(t, s)
	tn.Delegate = &engine.Delegation{Agents: []string{"scout", "tester"}, Socket: fake.Socket(), Token: "tok-openai-0123456789"}
	return tn
}

func TestDelegateToolLoop(t *testing.T) {
	t.Setenv("FLOW_TEST_OPENAI_KEY", fakeKey)
	for _, tc := range []struct {
		name  string
		reply engine.DelegateReply
		want  string // in the tool message the model gets
	}{
		{"answer", engine.DelegateReply{Answer: "scout-answer-9001: the flake is in TestRace"}, "scout-answer-9001: the flake is in TestRace"},
		{"refused", engine.DelegateReply{Error: "scout-answer-9001: refused, max_children 4 reached"}, "Error: scout-answer-9001: refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := delegatetest.Start(t, func(engine.DelegateRequest) engine.DelegateReply { return tc.reply })
			s := modelserver.Start(t)
			s.Handle(delegatetest.Model(`{"agent":"scout","task":"find the flaky test"}`, "scout-answer-9001", "The scout answered."))
			tn := delegating(t, s, fake)
			res, err := New(Options{}).Turn(context.Background(), tn)
			if err != nil || res.Status != engine.Completed || res.Output != "The scout answered." {
				t.Fatalf("Turn = %+v, %v", res, err)
			}
			if calls := fake.Calls(); len(calls) != 1 || calls[0] != (engine.DelegateRequest{Token: "tok-openai-0123456789", Agent: "scout", Task: "find the flaky test"}) {
				t.Fatalf("calls = %+v", calls)
			}
			reqs := s.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests, want the call's and the answer's", len(reqs))
			}
			var tool struct {
				Tools []struct {
					Function struct {
						Name       string
						Parameters struct {
							Properties map[string]struct{ Enum []string }
						}
					}
				}
			}
			if json.Unmarshal(reqs[0].Body, &tool) != nil || len(tool.Tools) != 1 || tool.Tools[0].Function.Name != "delegate" ||
				strings.Join(tool.Tools[0].Function.Parameters.Properties["agent"].Enum, ",") != "scout,tester" {
				t.Errorf("the first request offers %+v, want delegate with the agents", tool.Tools)
			}
			var second struct{ Messages []message }
			if err := json.Unmarshal(reqs[1].Body, &second); err != nil {
				t.Fatal(err)
			}
			n := len(second.Messages)
			if n < 2 || len(second.Messages[n-2].ToolCalls) != 1 || second.Messages[n-1].Role != "tool" ||
				second.Messages[n-1].ToolCallID != second.Messages[n-2].ToolCalls[0].ID || !strings.HasPrefix(second.Messages[n-1].Content, tc.want) {
				t.Errorf("the second request's messages = %+v", second.Messages)
			}
			// Usage: both rounds, each answer once, as billed.
			if *res.Usage.Turns != 2 || res.Usage.Partial || res.Usage.Tokens() != s.Billed() {
				t.Errorf("usage = %+v (%d tokens), want 2 turns and the %d billed", res.Usage, res.Usage.Tokens(), s.Billed())
			}
			turns, err := transcript.Turns(res.Transcript)
			if err != nil || len(turns) != 1 {
				t.Fatalf("transcript = %+v, %v", turns, err)
			}
			var kinds []string
			for _, st := range turns[0].Steps {
				kinds = append(kinds, st.Kind+":"+st.Title)
			}
			if got := strings.Join(kinds, " "); !strings.Contains(got, "tool:delegate result:delegate") {
				t.Errorf("transcript steps = %s", got)
			}
		})
	}
}

func TestDelegateRoundsBounded(t *testing.T) {
	t.Setenv("FLOW_TEST_OPENAI_KEY", fakeKey)
	fake := delegatetest.Start(t, func(engine.DelegateRequest) engine.DelegateReply { return engine.DelegateReply{Answer: "again"} })
	s := modelserver.Start(t, modelserver.Reply{ToolCall: &modelserver.ToolCall{Name: "delegate", Arguments: `{"agent":"scout","task":"more"}`}})
	res, err := New(Options{}).Turn(context.Background(), delegating(t, s, fake))
	if err != nil || res.Status != engine.Failed || !strings.Contains(strings.Join(res.Diagnostics, "\n"), "all 16 rounds") {
		t.Fatalf("Turn = %+v, %v; want failed at the bound", res, err)
	}
	if n := len(s.Requests()); n != MaxRounds || len(fake.Calls()) != MaxRounds-1 || *res.Usage.Turns != MaxRounds {
		t.Errorf("%d requests, %d calls, %d turns; want %d requests", n, len(fake.Calls()), *res.Usage.Turns, MaxRounds)
	}
	if res.Usage.Tokens() != s.Billed() {
		t.Errorf("usage %d tokens, billed %d", res.Usage.Tokens(), s.Billed())
	}
}

func TestDelegateOtherTool(t *testing.T) {
	t.Setenv("FLOW_TEST_OPENAI_KEY", fakeKey)
	fake := delegatetest.Start(t, func(engine.DelegateRequest) engine.DelegateReply { return engine.DelegateReply{Answer: "x"} })
	s := modelserver.Start(t, modelserver.Reply{ToolCall: &modelserver.ToolCall{Name: "bash", Arguments: `{"cmd":"ls"}`}},
		modelserver.Reply{Text: "Fine, no shell."})
	res, err := New(Options{}).Turn(context.Background(), delegating(t, s, fake))
	if err != nil || res.Status != engine.Completed || res.Output != "Fine, no shell." || len(fake.Calls()) != 0 {
		t.Fatalf("Turn = %+v, %v", res, err)
	}
	if last := string(s.Requests()[1].Body); !strings.Contains(last, `there is no tool \"bash\"`) {
		t.Errorf("the model was not told: %.600s", last)
	}
}

func TestNoDelegationNoTools(t *testing.T) {
	t.Setenv("FLOW_TEST_OPENAI_KEY", fakeKey)
	s := modelserver.Start(t, modelserver.Reply{Text: "ok"})
	if _, err := New(Options{}).Turn(context.Background(), turn(t, s)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(s.Requests()[0].Body), `"tools"`) {
		t.Error("a turn that may not delegate is offered tools")
	}
}

func TestDelegateCancelled(t *testing.T) {
	t.Setenv("FLOW_TEST_OPENAI_KEY", fakeKey)
	inCall, release := make(chan struct{}), make(chan struct{})
	fake := delegatetest.Start(t, func(engine.DelegateRequest) engine.DelegateReply {
		close(inCall)
		<-release // a child that runs until the test ends
		return engine.DelegateReply{Answer: "too late"}
	})
	defer close(release)
	s := modelserver.Start(t, modelserver.Reply{ToolCall: &modelserver.ToolCall{Name: "delegate", Arguments: `{"agent":"scout","task":"wait"}`}})
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		<-inCall
		cancel(errors.New("the test cancels"))
	}()
	res, err := New(Options{}).Turn(ctx, delegating(t, s, fake))
	if err == nil || err.Error() != "the test cancels" || res.Status != engine.Aborted {
		t.Fatalf("Turn = %+v, %v; want aborted with the cause", res, err)
	}
	if res.Usage.Tokens() != s.Billed() || *res.Usage.Turns != 1 {
		t.Errorf("usage = %+v, want the one billed round", res.Usage)
	}
}

func TestDelegateTwoChildren(t *testing.T) {
	t.Setenv("FLOW_TEST_OPENAI_KEY", fakeKey)
	fake := delegatetest.Start(t, delegatetest.Answer)
	s := modelserver.Start(t)
	s.Handle(delegatetest.Script("Both children answered.", delegatetest.TwoCalls...))
	tn := delegating(t, s, fake)
	var live int64
	tn.Progress = func(p engine.Progress) { live = max(live, p.Tokens) }
	res, err := New(Options{}).Turn(context.Background(), tn)
	if err != nil || res.Status != engine.Completed || res.Output != "Both children answered." {
		t.Fatalf("Turn = %+v, %v", res, err)
	}
	if calls := fake.Calls(); !slices.Equal(calls, delegatetest.TwoCallsMade("tok-openai-0123456789")) {
		t.Fatalf("calls = %+v", calls)
	}
	reqs := s.Requests()
	last := string(reqs[len(reqs)-1].Body)
	if len(reqs) != 3 || !strings.Contains(last, "done-scout-4242") || !strings.Contains(last, "done-tester-4242") {
		t.Errorf("%d requests; the last lacks a child's answer", len(reqs))
	}
	// Three rounds, each billed answer counted once; the live figure is
	// the turn's, not the last round's.
	if *res.Usage.Turns != 3 || res.Usage.Tokens() != s.Billed() || len(s.Bills()) != 3 || live != s.Billed() {
		t.Errorf("usage = %+v (%d tokens, %d live), want 3 turns and the %d billed", res.Usage, res.Usage.Tokens(), live, s.Billed())
	}
}
