package delegatetest

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/internal/modelserver"
)

// Call is one delegate call a scripted model makes: its arguments, and a
// marker of its result (a request that holds it got the result back).
type Call struct{ Args, Marker string }

// Model returns a modelserver handler for a turn that delegates once: see
// Script.
func Model(args, marker, final string) func(modelserver.Request) modelserver.Reply {
	return Script(final, Call{Args: args, Marker: marker})
}

// Script returns a modelserver handler for a turn that makes calls one
// after another: a request that offers a tool named like "delegate" (a
// CLI may prefix it, e.g. mcp__flow__delegate, or put it in a namespace)
// is answered with the next call once the previous call's result is in
// it, and with the text final once the last's is; any other request with
// a text that says what went wrong, so that a turn ends whatever the CLI
// did with a call.
func Script(final string, calls ...Call) func(modelserver.Request) modelserver.Reply {
	var mu sync.Mutex
	made := 0
	return func(r modelserver.Request) modelserver.Reply {
		mu.Lock()
		defer mu.Unlock()
		body := string(r.Body)
		back := made == 0 || strings.Contains(body, calls[made-1].Marker)
		switch name, ns := offered(r); {
		case made == len(calls) && back:
			return modelserver.Reply{Text: final}
		case name == "":
			return modelserver.Reply{Text: "no delegate tool was offered"}
		case !back:
			return modelserver.Reply{Text: "the delegate call's result did not come back"}
		default:
			made++
			return modelserver.Reply{ToolCall: &modelserver.ToolCall{Name: name, Namespace: ns, Arguments: calls[made-1].Args}}
		}
	}
}

type tool struct {
	Type     string `json:"type"`
	Name     string `json:"name"`
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
	Tools []tool `json:"tools"`
}

// ToolName is the full name of the delegate tool a request offers, or "":
// a tool in a namespace is named namespace__name, as Codex names them.
func ToolName(r modelserver.Request) string {
	name, ns := offered(r)
	if ns != "" {
		return ns + "__" + name
	}
	return name
}

// offered finds the delegate tool a request offers: its name, and the
// namespace it is in, if any.
func offered(r modelserver.Request) (name, namespace string) {
	var body struct {
		Tools []tool `json:"tools"`
	}
	if json.Unmarshal(r.Body, &body) != nil {
		return "", ""
	}
	for _, t := range body.Tools {
		for _, n := range []string{t.Name, t.Function.Name} {
			if n != "" && strings.HasSuffix(n, "delegate") {
				return n, ""
			}
		}
		// The Responses API's namespaces (Codex puts an MCP server's
		// tools in one): the call names the tool and its namespace.
		for _, in := range t.Tools {
			if t.Type == "namespace" && strings.HasSuffix(in.Name, "delegate") {
				return in.Name, t.Name
			}
		}
	}
	return "", ""
}

// flow is the flow command FlowBinary built, once per test binary.
var flow struct {
	once     sync.Once
	dir, bin string
	err      error
}

// FlowBinary returns the flow command, built once per test binary: the
// MCP server a CLI starts is the real `flow mcp-delegate`. A package that
// calls it removes the build in its TestMain with RemoveFlowBinary.
func FlowBinary(t testing.TB) string {
	t.Helper()
	flow.once.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		if flow.dir, flow.err = os.MkdirTemp("", "flow-bin-"); flow.err != nil {
			return
		}
		flow.bin = filepath.Join(flow.dir, "flow")
		cmd := exec.Command("go", "build", "-o", flow.bin, "./cmd/flow")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			flow.err = fmt.Errorf("building flow: %v\n%s", err, out)
		}
	})
	if flow.err != nil {
		t.Fatal(flow.err)
	}
	return flow.bin
}

// RemoveFlowBinary removes what FlowBinary built, if it built anything.
func RemoveFlowBinary() {
	if flow.dir != "" {
		os.RemoveAll(flow.dir)
	}
}

// TwoCalls is a script's two calls, to scout and then to tester; Answer
// answers them with their markers.
var TwoCalls = []Call{
	{Args: `{"agent":"scout","task":"find the flaky test"}`, Marker: "done-scout-4242"},
	{Args: `{"agent":"tester","task":"run it a hundred times"}`, Marker: "done-tester-4242"},
}

// Answer is a fake child's answer: what it did, and its agent's marker.
func Answer(r engine.DelegateRequest) engine.DelegateReply {
	return engine.DelegateReply{Answer: r.Agent + " did: " + r.Task + "; done-" + r.Agent + "-4242"}
}

// TwoCallsMade is what the socket must have received of TwoCalls from a
// turn holding token.
func TwoCallsMade(token string) []engine.DelegateRequest {
	return []engine.DelegateRequest{
		{Token: token, Agent: "scout", Task: "find the flaky test"},
		{Token: token, Agent: "tester", Task: "run it a hundred times"},
	}
}

// RunawayFinal is the answer of a Runaway turn that delegates no more.
const RunawayFinal = "runaway-final-7781"

// Runaway returns a modelserver handler for an agent that keeps
// delegating to itself: a request that offers the delegate tool and holds
// no reply of a call yet is answered with a call of args; any other
// request (no tool offered, or a child's answer or failure in it) with
// RunawayFinal. Every answer bills input and output tokens.
func Runaway(args string, input, output int) func(modelserver.Request) modelserver.Reply {
	return func(r modelserver.Request) modelserver.Reply {
		rep := modelserver.Reply{Text: RunawayFinal, Input: input, Output: output}
		body := string(r.Body)
		replied := strings.Contains(body, RunawayFinal) || strings.Contains(body, "refused: ") || strings.Contains(body, "#1 failed (")
		if name, ns := offered(r); name != "" && !replied {
			rep.Text, rep.ToolCall = "", &modelserver.ToolCall{Name: name, Namespace: ns, Arguments: args}
		}
		return rep
	}
}
