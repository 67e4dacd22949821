package main

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/internal/modelserver"
	"github.com/flowrun/flow/rundir"
)

// billedServer scripts a tool-using turn for dc — a tool call (after a
// line of text, so that Claude Code emits two events of one message),
// then the final answer — and reports part of every prompt as read from
// the cache, and on the Messages API part as written to it, so that each
// driver's normalisation of cached tokens is put to the test.
func billedServer(t *testing.T, dc driverCase) *modelserver.Server {
	t.Helper()
	s := modelserver.Start(t)
	calls := 0
	s.Handle(func(r modelserver.Request) modelserver.Reply {
		rep := modelserver.Reply{Text: "I saw marker.txt.", CacheRead: -1}
		if strings.HasSuffix(r.Path, "/messages") {
			rep.CacheWrite = 40
		}
		calls++
		if calls == 1 && dc.tool != nil {
			rep.Text, rep.ToolCall = "Listing.", dc.tool
		}
		return rep
	})
	return s
}

// billedFlow is one turn of the helper under a flow budget of tokens (0:
// none).
func billedFlow(tokens int64) string {
	budget := ""
	if tokens > 0 {
		budget = fmt.Sprintf("budget: {tokens: %d}\n", tokens)
	}
	return "name: f\n" + budget + "agents: [./agents]\nnodes:\n  - {id: look, agent: helper, prompt: List the files.}\n"
}

// endUsage returns the usage the journal's end fact of visit records.
func endUsage(t *testing.T, run, visit string) *record.Usage {
	t.Helper()
	for _, f := range journal(t, run) {
		if f.Type == record.FactEnd && f.Visit == visit {
			return f.Usage
		}
	}
	t.Fatalf("no end fact of %s in %s", visit, run)
	return nil
}

// allTokens is input, output, cache reads and cache writes: what a
// provider bills.
func allTokens(u *record.Usage) int64 {
	if u == nil {
		return 0
	}
	var n int64
	for _, p := range []*int64{u.Input, u.Output, u.CacheRead, u.CacheWrite} {
		if p != nil {
			n += *p
		}
	}
	return n
}

func showUsage(u *record.Usage) string {
	if u == nil {
		return "null"
	}
	f := func(p *int64) string {
		if p == nil {
			return "null"
		}
		return fmt.Sprint(*p)
	}
	return fmt.Sprintf("input %s, output %s, cache_read %s, cache_write %s, partial %v",
		f(u.Input), f(u.Output), f(u.CacheRead), f(u.CacheWrite), u.Partial)
}

// A tool-using turn of each real CLI records what the server billed, U; the
// same turn succeeds under a flow budget of 1.1 × U, and a budget of
// 0.5 × U stops it with kind budget and its usage in the journal within 5%
// of what the server billed. The openai driver offers no tools: its turn is
// one request, recorded as billed and passing under 1.1 × U.
func TestBudgetHoldsWhatTheProviderBilled(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"pi", "claude", "codex", "openai"} {
		dc := driverByName(t, name)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := billedServer(t, dc)
			run := runFlow(t, dc, s, billedFlow(0))
			billed := s.Billed()
			u := endUsage(t, run, "look")
			t.Logf("%s: billed %d in %d requests, recorded %d (%s)", name, billed, len(s.Bills()), allTokens(u), showUsage(u))
			if u == nil || allTokens(u) != billed || u.Tokens() != billed {
				t.Errorf("recorded %s, the server billed %d", showUsage(u), billed)
			}

			s = billedServer(t, dc)
			if run, out, err := runFlowResult(t, dc, s, billedFlow(int64(math.Ceil(1.1*float64(billed))))); err != nil {
				t.Errorf("under a budget of 1.1 × %d: %v (billed %d, recorded %s)\n%s", billed, err, s.Billed(), showUsage(endUsage(t, run, "look")), out)
			}

			if dc.tool == nil {
				return // one request: nothing to stop once it is answered
			}
			s = billedServer(t, dc)
			run, out, err := runFlowResult(t, dc, s, billedFlow(billed/2))
			u = endUsage(t, run, "look")
			t.Logf("%s under %d: billed %d, recorded %d (%s)", name, billed/2, s.Billed(), allTokens(u), showUsage(u))
			if err == nil {
				t.Fatalf("a budget of half the turn did not stop it:\n%s", out)
			}
			info, ierr := rundir.Inspect(run)
			if ierr != nil {
				t.Fatal(ierr)
			}
			if info.Failure == nil || info.Failure.Root().Kind != "budget" {
				t.Fatalf("want kind budget, got %+v\n%s", info.Failure, out)
			}
			if got, want := float64(allTokens(u)), float64(s.Billed()); u == nil || math.Abs(got-want) > 0.05*want {
				t.Errorf("the stopped turn recorded %s, the server billed %.0f", showUsage(u), want)
			}
		})
	}
}
