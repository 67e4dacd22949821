package engine

import (
	"fmt"
	"strings"

	"github.com/flowrun/flow/engine/shown"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/schema"
)

// render evaluates a template: strings are inserted as they are, null as
// nothing, other values as JSON.
func render(t *flows.Template, vars map[string]any) (string, error) {
	if t == nil {
		return "", nil
	}
	var b strings.Builder
	for _, p := range t.Parts {
		if p.Expr == nil {
			b.WriteString(p.Text)
			continue
		}
		v, err := eval(p.Expr, vars)
		if err != nil {
			return "", err
		}
		b.WriteString(text(v))
	}
	return b.String(), nil
}

// promptTooLarge is a turn whose prompt would pass limits.prompt_bytes:
// the engine refuses to send it.
type promptTooLarge struct {
	node, part string
	size, max  int
}

func (e *promptTooLarge) Error() string {
	return fmt.Sprintf("the prompt of %s would be larger than limits.prompt_bytes (%d bytes): %s renders %d bytes; read less (a field, not the whole value), or raise limits.prompt_bytes", e.node, e.max, e.part, e.size)
}

// turnText builds what a turn receives (docs/flow-files.md, agent): the prompt, each read
// under its own heading, the output instruction, the working directory.
// It is bounded by limits.prompt_bytes, checked as each part is rendered,
// so that no part is rendered past the bound the parts before it left.
func (r *runner) turnText(fr *frame, n *flows.Node, vars map[string]any) (string, error) {
	an := n.AsAgent()
	limit := r.plan.Limits.WithDefaults().PromptBytes
	prompt, err := render(an.Prompt, vars)
	if err != nil {
		return "", err
	}
	if len(prompt) > limit {
		return "", &promptTooLarge{node: n.ID, part: "its prompt template", size: len(prompt), max: limit}
	}
	var b strings.Builder
	b.WriteString(prompt)
	for _, rd := range an.Reads {
		v, err := eval(rd.Expr, vars)
		if err != nil {
			return "", err
		}
		text := readText(v, rd.IsNode)
		if b.Len()+len(text) > limit {
			return "", &promptTooLarge{node: n.ID, part: "the read " + rd.Address, size: len(text), max: limit}
		}
		fmt.Fprintf(&b, "\n\n## %s\n%s", rd.Address, text)
	}
	if an.Typed {
		fmt.Fprintf(&b, "\n\n## Answer format\nAnswer with only a JSON value (no prose, no code fence) that fits this JSON Schema:\n```json\n%s\n```", an.OutputSchema)
	}
	fmt.Fprintf(&b, "\n\nWorking directory: %s\n", r.workDir(fr))
	if fr.branch != "" {
		fmt.Fprintf(&b, "It is a git worktree of its own, on branch %s: change files there. flow commits what you change and lands it on %s when this work ends; you need not commit.\n", fr.branch, r.wt.Integration())
	}
	return b.String(), nil
}

// readText renders one read: a node's output as text (typed values and
// failures as fenced JSON), oversized answers as a prefix and the file.
func readText(v any, isNode bool) string {
	if !isNode {
		if s, ok := v.(string); ok {
			return s
		}
		return jsonFence(v)
	}
	nv, ok := v.(map[string]any)
	if !ok || nv == nil {
		return "(nothing yet: this is the first iteration)"
	}
	if ok, _ := nv["ok"].(bool); !ok {
		return "This node failed:\n" + jsonFence(map[string]any{"ok": false, "error": nv["error"]})
	}
	if skipped, _ := nv["skipped"].(bool); skipped {
		return "(skipped)"
	}
	out := nv["output"]
	s, isText := out.(string)
	if !isText {
		return jsonFence(out)
	}
	if file, _ := nv["_file"].(string); file != "" {
		size, _ := nv["_size"].(int64)
		return reply{text: UTF8Prefix(s, AnswerLimit), file: file, size: max(size, int64(len(s)))}.shown()
	}
	return s
}

// normalize converts decoded JSON to the types expressions were checked
// against: whole numbers where the type says integer.
func normalize(t *schema.Type, v any) any { return t.Normalize(v) }

// text, jsonFence, fence and parseTyped are package shown's.
var (
	text       = shown.Text
	jsonFence  = shown.JSONFence
	fence      = shown.Fence
	parseTyped = shown.ParseTyped
)
