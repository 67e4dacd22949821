package claude

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/flowrun/flow/engine"
)

// turnHeader is the line the driver writes into the transcript before each
// turn's raw stream, so that a reader can tell the turns of a memory scope
// apart and see the prompt.
type turnHeader struct {
	Type    string `json:"type"` // always "flow_turn"
	Visit   string `json:"visit"`
	Model   string `json:"model"`
	Session string `json:"session,omitempty"`
	Time    string `json:"time"`
	Prompt  string `json:"prompt"`
}

// transcript appends a turn's raw stream to <Home>/<agent>.jsonl.
type transcript struct {
	path string
	f    *os.File
	err  error
}

// openTranscript opens the transcript of the turn's agent for appending and
// writes the turn's header. A transcript that cannot be written is a
// diagnostic, never a reason to fail the turn.
func openTranscript(t *engine.Turn) *transcript {
	if t.Home == "" {
		return &transcript{}
	}
	tr := &transcript{path: filepath.Join(t.Home, fileName(t.Agent.Name)+".jsonl")}
	// The engine leaves creating the home to whoever writes there first.
	if tr.err = os.MkdirAll(t.Home, 0o755); tr.err == nil {
		tr.f, tr.err = os.OpenFile(tr.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	}
	if tr.err != nil {
		tr.path = ""
		return tr
	}
	h, _ := json.Marshal(turnHeader{Type: "flow_turn", Visit: t.Visit, Model: t.Model, Session: t.Session,
		Time: time.Now().UTC().Format(time.RFC3339), Prompt: t.Prompt})
	tr.write(h)
	return tr
}

// write appends one line (in one write, so a torn line can only be the last).
func (tr *transcript) write(line []byte) {
	if tr.f == nil || tr.err != nil {
		return
	}
	buf := make([]byte, 0, len(line)+1)
	buf = append(append(buf, bytes.TrimRight(line, "\r\n")...), '\n')
	_, tr.err = tr.f.Write(buf)
}

// Close closes the transcript and returns the first error it met.
func (tr *transcript) Close() error {
	if tr.f != nil {
		if err := tr.f.Close(); tr.err == nil {
			tr.err = err
		}
		tr.f = nil
	}
	if tr.err != nil {
		return fmt.Errorf("writing transcript: %w", tr.err)
	}
	return nil
}

// writeHTML renders the whole transcript (every turn so far) as a
// self-contained page beside it, replacing the previous one atomically.
func writeHTML(jsonlPath, agent string) error {
	f, err := os.Open(jsonlPath)
	if err != nil {
		return fmt.Errorf("rendering transcript: %w", err)
	}
	defer f.Close()
	var b strings.Builder
	fmt.Fprintf(&b, "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>%s — Claude Code transcript</title>\n<style>%s</style></head><body>\n<h1>%s <small>Claude Code</small></h1>\n",
		esc(agent), pageStyle, esc(agent))
	r := bufio.NewReaderSize(f, 64<<10)
	for {
		line, rerr := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			renderLine(&b, line)
		}
		if rerr != nil {
			break
		}
	}
	b.WriteString("</body></html>\n")
	out := strings.TrimSuffix(jsonlPath, ".jsonl") + ".html"
	tmp := out + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("rendering transcript: %w", err)
	}
	if err := os.Rename(tmp, out); err != nil {
		return fmt.Errorf("rendering transcript: %w", err)
	}
	return nil
}

const pageStyle = `body{font:14px/1.45 system-ui,sans-serif;max-width:60em;margin:2em auto;padding:0 1em;color:#222}
h2{border-top:2px solid #888;padding-top:.5em;font-size:1.1em}
.msg{margin:.6em 0;padding:.5em .8em;border-radius:6px;background:#f4f4f4}
.assistant{background:#eef5ff}.tool{background:#f7f3e8}.error{background:#fde8e8}.prompt{background:#eefbe9}
pre{white-space:pre-wrap;word-break:break-word;margin:.3em 0;font:13px/1.4 ui-monospace,monospace}
.meta{color:#666;font-size:.85em}`

func renderLine(b *strings.Builder, line []byte) {
	var ev struct {
		event
		Visit  string `json:"visit"`
		Time   string `json:"time"`
		Prompt string `json:"prompt"`
	}
	if json.Unmarshal(line, &ev) != nil {
		fmt.Fprintf(b, "<div class=\"msg error\"><pre>%s</pre></div>\n", esc(string(line)))
		return
	}
	switch ev.Type {
	case "flow_turn":
		fmt.Fprintf(b, "<h2>%s</h2>\n<p class=\"meta\">model %s · %s</p>\n<div class=\"msg prompt\"><b>prompt</b><pre>%s</pre></div>\n",
			esc(ev.Visit), esc(orDefault(ev.Model)), esc(ev.Time), esc(ev.Prompt))
	case "system":
		switch ev.Subtype {
		case "init":
			fmt.Fprintf(b, "<p class=\"meta\">session %s · model %s</p>\n", esc(ev.SessionID), esc(ev.Model))
		case "api_retry":
			fmt.Fprintf(b, "<div class=\"msg error\">retry %d of %d: %s</div>\n", ev.Attempt, ev.MaxRetries, esc(fmt.Sprint(ev.Error)))
		}
	case "assistant", "user":
		renderMessage(b, ev.Type, ev.Message)
	case "result":
		cls := "meta"
		if ev.IsError {
			cls = "msg error"
		}
		meta := fmt.Sprintf("result %s · stop %s", ev.Subtype, ev.StopReason)
		if u := ev.Usage; u != nil {
			meta += fmt.Sprintf(" · input %d · output %d", deref(u.Input), deref(u.Output))
		}
		if ev.TotalCostUSD != nil {
			meta += fmt.Sprintf(" · $%.6f", *ev.TotalCostUSD)
		}
		fmt.Fprintf(b, "<div class=\"%s\">%s", cls, esc(meta))
		if ev.IsError {
			fmt.Fprintf(b, "<pre>%s</pre>", esc(ev.Result))
		}
		b.WriteString("</div>\n")
	}
}

func renderMessage(b *strings.Builder, role string, m *msg) {
	if m == nil {
		return
	}
	for _, c := range m.Content {
		switch c.Type {
		case "text":
			if role == "assistant" {
				fmt.Fprintf(b, "<div class=\"msg assistant\"><pre>%s</pre></div>\n", esc(c.Text))
			}
		case "thinking":
			fmt.Fprintf(b, "<div class=\"msg assistant\"><details><summary>thinking</summary><pre>%s</pre></details></div>\n", esc(c.Thinking))
		case "tool_use":
			fmt.Fprintf(b, "<div class=\"msg assistant\"><b>%s</b> <code>%s</code></div>\n", esc(c.Name), esc(string(c.Input)))
		case "tool_result":
			cls := "tool"
			if c.IsError {
				cls = "error"
			}
			fmt.Fprintf(b, "<div class=\"msg %s\"><details><summary>tool result</summary><pre>%s</pre></details></div>\n", cls, esc(resultText(c.Content)))
		}
	}
}

// resultText renders a tool result's content: a string, or text blocks.
func resultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []block
	if json.Unmarshal(raw, &blocks) == nil {
		var parts []string
		for _, bl := range blocks {
			if bl.Type == "text" {
				parts = append(parts, bl.Text)
			}
		}
		return strings.Join(parts, "\n")
	}
	return string(raw)
}

func esc(s string) string { return html.EscapeString(s) }

func orDefault(model string) string {
	if model == "" {
		return "(claude's default)"
	}
	return model
}

// fileName keeps an agent name inside the home directory.
func fileName(agent string) string {
	name := strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == 0 {
			return '_'
		}
		return r
	}, agent)
	if name == "" || name == "." || name == ".." {
		return "agent"
	}
	return name
}
