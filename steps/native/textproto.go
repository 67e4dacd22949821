package native

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/steps/delegate"
)

// The tool-call protocols (docs/native.md#tool-call-protocols).
const (
	// ProtocolNative is the server's own tool calls (the request's tools,
	// the answer's tool_calls).
	ProtocolNative = "native"
	// ProtocolText is a fenced block in the model's answer, for a server
	// that refuses tools or a model that writes its calls as text.
	ProtocolText = "text"
)

// textInstructions tells a model of the text protocol how to call tools:
// appended to the system message.
func textInstructions(tools []string, deleg *engine.Delegation) string {
	var b strings.Builder
	b.WriteString("\n\n## Tools\n\nYou have these tools:\n\n")
	names := append([]string(nil), tools...)
	sort.Strings(names)
	for _, n := range names {
		d := definitions[n]
		params, _ := json.Marshal(d["parameters"])
		fmt.Fprintf(&b, "- %s: %s Arguments (JSON schema): %s\n", n, d["description"], params)
	}
	if deleg != nil {
		params, _ := json.Marshal(delegate.Schema(deleg.Agents))
		fmt.Fprintf(&b, "- %s: %s Arguments (JSON schema): %s\n", delegate.Tool, delegate.Description, params)
	}
	b.WriteString("\nTo call a tool, end your answer with one block like this, and nothing after it:\n\n" +
		"```tool\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n```\n\n" +
		"The tool's result comes back as the next message. Call one tool at a time. " +
		"When you are done, answer without a tool block.")
	return b.String()
}

// fenced finds a ```tool (or ```json) block.
var fenced = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("(?s)```(?:tool|tool_call|json)[ \t]*\n(.*?)\n?```") })

// textCall is a tool call written as text.
type textCall struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// parseText finds the tool call a model wrote in its answer: the last
// fenced block — with last, only one that ends the answer — else the
// whole answer when it is a JSON object only, naming one of tools. ok
// false: the answer calls no tool.
func parseText(text string, tools []string, last bool) (name, args string, ok bool) {
	var candidates []string
	for _, m := range fenced().FindAllStringSubmatchIndex(text, -1) {
		if last && strings.TrimSpace(text[m[1]:]) != "" {
			continue
		}
		candidates = append(candidates, text[m[2]:m[3]])
	}
	if t := strings.TrimSpace(text); strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}") {
		candidates = append(candidates, t)
	}
	for i := len(candidates) - 1; i >= 0; i-- {
		var c textCall
		if json.Unmarshal([]byte(strings.TrimSpace(candidates[i])), &c) != nil || !contains(tools, c.Name) {
			continue
		}
		args := strings.TrimSpace(string(c.Arguments))
		if args == "" || args == "null" {
			args = "{}"
		}
		// Some models write the arguments as a JSON string.
		var s string
		if json.Unmarshal([]byte(args), &s) == nil {
			args = s
		}
		return c.Name, args, true
	}
	return "", "", false
}

// textResult is how a tool's result comes back under the text protocol:
// as the user's next message.
func textResult(name, result string, isErr bool) string {
	if isErr {
		return fmt.Sprintf("Result of %s (an error):\n%s", name, result)
	}
	return fmt.Sprintf("Result of %s:\n%s", name, result)
}
