package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/schema"
)

// nearVisits names the visits of a run closest to a visit it does not
// have: the same path with other iterations and items (review/verdict →
// review#1/verdict, review#2/verdict), else the visits ending in the same
// node, else the one a few edits away.
func nearVisits(facts []*record.Fact, visit string) []string {
	var all []string
	for _, v := range rundir.Visits(facts) {
		all = append(all, v.Start.Visit)
	}
	pick := func(match func(string) bool) []string {
		var out []string
		for _, v := range all {
			if match(v) && !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
		if len(out) > 6 {
			out = append(out[:6], "…")
		}
		return out
	}
	bare := bareVisit(visit)
	if near := pick(func(v string) bool { return bareVisit(v) == bare }); near != nil {
		return near
	}
	last := bare[strings.LastIndexByte(bare, '/')+1:]
	if near := pick(func(v string) bool { b := bareVisit(v); return b[strings.LastIndexByte(b, '/')+1:] == last }); near != nil {
		return near
	}
	if hint := schema.DidYouMean(visit, all); hint != "" {
		return []string{strings.TrimSuffix(strings.TrimPrefix(hint, `did you mean "`), `"?`)}
	}
	return nil
}

var iterationRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`#\d+|\[\d+\]`) })

// bareVisit is a visit path without its iteration and item marks.
func bareVisit(v string) string { return iterationRE().ReplaceAllString(v, "") }

// noVisit is the error of flow tail for a visit the run does not have.
func noVisit(err error, facts []*record.Fact, visit string) error {
	msg := err.Error()
	if near := nearVisits(facts, visit); near != nil {
		msg += "; did you mean " + strings.Join(near, ", ") + "?"
	}
	return invalid("%s", msg)
}

// commandOutput is what flow tail shows of a visit that keeps no
// transcript file: a run node's captured output, which the journal holds
// when it was short and quick (longer output is in <home>/output.log).
func commandOutput(facts []*record.Fact, visit string) (string, bool) {
	for _, v := range rundir.Visits(facts) {
		if v.Start.Visit != visit || v.Start.Kind != schema.KindRun || v.End == nil {
			continue
		}
		e := v.End
		if e.Error != nil {
			return fmt.Sprintf("%s: %s\n", e.Error.Kind, e.Error.Message), true
		}
		out, _ := e.Output.(map[string]any)
		report, _ := out["report"].(string)
		if report != "" && !strings.HasSuffix(report, "\n") {
			report += "\n"
		}
		return fmt.Sprintf("%s(exit %v)\n", report, out["exit"]), true
	}
	return "", false
}

// readable renders the JSON lines of a transcript as a person reads them:
// a turn's prompt, its steps (text, tool calls and their results) and its
// answer as text, a typed answer as indented JSON. The raw stream lines
// of a turn that has ended are left out (its summary line says what they
// did); those of a turn still running are kept as written, as is every
// line that is not JSON.
func readable(text string) string {
	var b strings.Builder
	var pending []string // raw stream lines since the last summary
	flush := func() {
		for _, l := range pending {
			b.WriteString(l)
		}
		pending = nil
	}
	for _, line := range strings.SplitAfter(text, "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &rec) != nil {
			flush()
			b.WriteString(line)
			continue
		}
		switch {
		case rec["flow_turn_start"] != nil:
			flush()
			h, _ := rec["flow_turn_start"].(map[string]any)
			fmt.Fprintf(&b, "── turn of %v (%v%s)\n", h["visit"], h["driver"], modelText(h["model"]))
			section(&b, "prompt", h["prompt"])
		case rec["flow_turn"] != nil:
			pending = nil
			s, _ := rec["flow_turn"].(map[string]any)
			steps, _ := s["steps"].([]any)
			for _, st := range steps {
				step(&b, st)
			}
			section(&b, "answer", s["answer"])
			if st, ok := s["status"]; ok {
				fmt.Fprintf(&b, "── %v\n", st)
			}
		case rec["tool_result"] != nil: // a native turn's call, while it runs
			r, _ := rec["tool_result"].(map[string]any)
			fmt.Fprintf(&b, "← %v: %s\n", r["name"], oneLine(fmt.Sprint(r["content"]), 200))
		case rec["prompt"] != nil && rec["answer"] != nil: // an exec agent's turn
			flush()
			fmt.Fprintf(&b, "── turn of %v%s, exit %v\n", rec["visit"], modelText(rec["model"]), rec["exit"])
			section(&b, "prompt", rec["prompt"])
			section(&b, "answer", rec["answer"])
		default:
			pending = append(pending, line)
		}
	}
	flush()
	return b.String()
}

// step writes one step of a turn: a tool call and its result on a line
// each (a long result cut), text and thinking whole.
func step(b *strings.Builder, v any) {
	st, _ := v.(map[string]any)
	kind, _ := st["kind"].(string)
	title, _ := st["title"].(string)
	text, _ := st["text"].(string)
	switch kind {
	case "tool":
		fmt.Fprintf(b, "→ %s %s\n", title, oneLine(text, 200))
	case "result":
		fmt.Fprintf(b, "← %s\n", oneLine(text, 200))
	case "error":
		fmt.Fprintf(b, "error: %s\n", text)
	default:
		fmt.Fprintf(b, "%s:\n%s\n", kind, strings.TrimRight(text, "\n"))
	}
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n-3] + "..."
	}
	return s
}

func modelText(m any) string {
	if s, _ := m.(string); s != "" {
		return ", " + s
	}
	return ""
}

// section writes a titled block: text as it is, JSON (an answer typed by
// the node, or a string holding JSON) indented.
func section(b *strings.Builder, title string, v any) {
	if v == nil {
		return
	}
	text, isString := v.(string)
	var parsed any
	switch {
	case !isString:
		parsed = v
	case strings.HasPrefix(strings.TrimSpace(text), "{") || strings.HasPrefix(strings.TrimSpace(text), "["):
		if json.Unmarshal([]byte(text), &parsed) != nil {
			parsed = nil
		}
	}
	if parsed != nil {
		if pretty, err := json.MarshalIndent(parsed, "", "  "); err == nil {
			text = string(pretty)
		}
	}
	fmt.Fprintf(b, "%s:\n%s\n", title, strings.TrimRight(text, "\n"))
}
