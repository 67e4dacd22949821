package delegatetest

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/flowrun/flow/internal/modelserver"
)

// Model returns a modelserver handler for a turn that delegates once: the
// first request that offers a tool named like "delegate" (a CLI may
// prefix it, e.g. mcp__flow__delegate) is answered with a call of that
// tool with args; a request whose body holds marker (the tool's result
// came back) is answered with the text final; any other with a text that
// says what went wrong, so a turn ends whatever the CLI did with the call.
func Model(args, marker, final string) func(modelserver.Request) modelserver.Reply {
	var called atomic.Bool
	return func(r modelserver.Request) modelserver.Reply {
		switch name, ns := offered(r); {
		case strings.Contains(string(r.Body), marker):
			return modelserver.Reply{Text: final}
		case name == "":
			return modelserver.Reply{Text: "no delegate tool was offered"}
		case called.Swap(true):
			return modelserver.Reply{Text: "the delegate call's result did not come back"}
		default:
			return modelserver.Reply{ToolCall: &modelserver.ToolCall{Name: name, Namespace: ns, Arguments: args}}
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

// FlowBinary builds the flow command into a directory of t's and returns
// its path: the MCP server a CLI starts is the real `flow mcp-delegate`.
func FlowBinary(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	bin := filepath.Join(t.TempDir(), "flow")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/flow")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building flow: %v\n%s", err, out)
	}
	return bin
}
