package delegatetest

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/flowrun/flow/internal/modelserver"
)

// Model returns a modelserver handler for a turn that delegates once: a
// request that offers a tool named like "delegate" (a CLI may prefix it,
// e.g. mcp__flow__delegate) is answered with a call of that tool with
// args; a request whose body already holds marker (the tool's result
// came back) is answered with the text final.
func Model(args, marker, final string) func(modelserver.Request) modelserver.Reply {
	return func(r modelserver.Request) modelserver.Reply {
		if strings.Contains(string(r.Body), marker) {
			return modelserver.Reply{Text: final}
		}
		if name := ToolName(r); name != "" {
			return modelserver.Reply{ToolCall: &modelserver.ToolCall{Name: name, Arguments: args}}
		}
		return modelserver.Reply{Text: "no delegate tool was offered"}
	}
}

// ToolName is the name of the delegate tool a request offers, or "".
func ToolName(r modelserver.Request) string {
	var body struct {
		Tools []struct {
			Name     string `json:"name"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if json.Unmarshal(r.Body, &body) != nil {
		return ""
	}
	for _, t := range body.Tools {
		for _, n := range []string{t.Name, t.Function.Name} {
			if n != "" && strings.HasSuffix(n, "delegate") {
				return n
			}
		}
	}
	return ""
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
