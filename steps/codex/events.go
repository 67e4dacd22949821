package codex

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/steps/agentcli"
	"github.com/flowrun/flow/steps/transcript"
	"github.com/flowrun/flow/steps/usage"
)

func ptr[T any](v T) *T { return &v }

// event is one line of `codex exec --json`.
type event struct {
	Type     string          `json:"type"`
	ThreadID string          `json:"thread_id"`
	Item     json.RawMessage `json:"item"`
	Usage    *threadUsage    `json:"usage"`
	Error    *struct {
		Message string `json:"message"`
	} `json:"error"`
	Message string `json:"message"`
}

// item is a thread item inside item.started/updated/completed.
type item struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Text    string `json:"text"`
	Message string `json:"message"`
	Command string `json:"command"`
	Output  string `json:"aggregated_output"`
	Exit    *int   `json:"exit_code"`
	Status  string `json:"status"`
	Server  string `json:"server"`
	Tool    string `json:"tool"`
	Query   string `json:"query"`
	Changes []struct {
		Path string `json:"path"`
		Kind string `json:"kind"`
	} `json:"changes"`
}

// stream folds the events of one turn.
type stream struct {
	progress func(engine.Progress)
	// before is the thread's usage before this turn: Codex's
	// turn.completed reports the whole thread's, earlier turns included.
	before    threadUsage
	after     *threadUsage // the thread's usage that turn.completed reported
	thread    string
	answer    string
	completed bool
	failed    []string // turn.failed messages
	malformed bool
	ledger    usage.Ledger
	diag      []string
	steps     []transcript.Step
	calls     *agentcli.Calls // the turn's tool calls, journalled for its trace
	started   map[string]bool // the tool items started and not yet completed
}

func newStream(progress func(engine.Progress), calls *agentcli.Calls) *stream {
	return &stream{progress: progress, calls: calls, started: map[string]bool{}}
}

// line folds line n (counted from 1) of stdout.
func (s *stream) line(n int, raw []byte) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return
	}
	var e event
	if err := json.Unmarshal(raw, &e); err != nil || e.Type == "" {
		if err == nil {
			err = fmt.Errorf("no event type")
		}
		s.malformed = true
		s.diag = append(s.diag, fmt.Sprintf("malformed line %d: %v: %s", n, err, clip(string(raw))))
		return
	}
	switch e.Type {
	case "thread.started":
		s.thread = e.ThreadID
	case "turn.started":
		s.ledger.Open()
		s.progress(engine.Progress{Activity: "thinking"})
	case "item.started", "item.updated", "item.completed":
		var it item
		if err := json.Unmarshal(e.Item, &it); err != nil {
			s.malformed = true
			s.diag = append(s.diag, fmt.Sprintf("malformed line %d: %s item: %v", n, e.Type, err))
			return
		}
		s.item(e.Type, &it)
	case "turn.completed":
		s.completed = true
		if e.Usage != nil {
			// The thread's usage, summed over its requests; this turn's is
			// what it adds. Codex's input_tokens count the cached ones, as
			// the Responses API's do.
			s.after = e.Usage
			u := e.Usage.minus(s.before)
			c := usage.OpenAI(u.Input, u.Cached, u.Output)
			if u.CacheWrite != nil && c.Input != nil {
				c.CacheWrite, c.Input = u.CacheWrite, ptr(max(*c.Input-*u.CacheWrite, 0))
			}
			s.ledger.Total(c)
			s.progress(engine.Progress{Activity: "done", Tokens: s.ledger.Tokens()})
		} else {
			s.ledger.Final()
		}
	case "turn.failed":
		msg := "turn.failed"
		if e.Error != nil && e.Error.Message != "" {
			msg = e.Error.Message
		}
		s.failed = append(s.failed, msg)
		s.diag = append(s.diag, "codex: the turn failed: "+msg)
	case "error":
		s.diag = append(s.diag, "codex: "+e.Message)
		s.steps = append(s.steps, transcript.Step{Kind: "error", Text: e.Message})
	default:
		s.diag = append(s.diag, fmt.Sprintf("line %d: unknown event type %q", n, e.Type))
	}
}

func (s *stream) item(typ string, it *item) {
	s.tool(typ, it)
	if typ == "item.started" {
		switch it.Type {
		case "command_execution":
			s.progress(engine.Progress{Activity: "running " + clip(it.Command)})
		case "file_change":
			s.progress(engine.Progress{Activity: "editing files"})
		case "mcp_tool_call":
			s.progress(engine.Progress{Activity: "using " + it.Tool})
		case "web_search":
			s.progress(engine.Progress{Activity: "searching the web"})
		}
		return
	}
	if typ != "item.completed" {
		return
	}
	switch it.Type {
	case "agent_message":
		s.answer = it.Text
		s.progress(engine.Progress{Activity: "writing"})
		s.steps = append(s.steps, transcript.Step{Kind: "text", Text: it.Text})
	case "reasoning":
		s.steps = append(s.steps, transcript.Step{Kind: "thinking", Text: it.Text})
	case "command_execution":
		s.steps = append(s.steps, transcript.Step{Kind: "tool", Title: it.Command, Text: it.Output + exitNote(it)})
	case "file_change":
		var b strings.Builder
		for _, c := range it.Changes {
			fmt.Fprintf(&b, "%s %s\n", c.Kind, c.Path)
		}
		s.steps = append(s.steps, transcript.Step{Kind: "tool", Title: "file change", Text: b.String()})
	case "mcp_tool_call":
		s.steps = append(s.steps, transcript.Step{Kind: "tool", Title: it.Server + "/" + it.Tool, Text: it.Status})
	case "web_search":
		s.steps = append(s.steps, transcript.Step{Kind: "tool", Title: "web search", Text: it.Query})
	case "error":
		// A warning from Codex (e.g. unknown model metadata); the turn goes on.
		s.diag = append(s.diag, "codex: "+it.Message)
		s.steps = append(s.steps, transcript.Step{Kind: "error", Text: it.Message})
	case "todo_list":
	default:
		s.diag = append(s.diag, fmt.Sprintf("unknown item type %q", it.Type))
	}
}

// tool journals the tool items — a command, a file change, an MCP tool
// call, a web search — from their start to their completion (one shown
// only completed is a call of no duration). Codex's stream does not say
// which request made a call, nor what each request spent (turn.completed
// has the turn's usage only), so its calls carry no usage: the trace has
// an execute_tool span per call and one chat span for the turn.
func (s *stream) tool(typ string, it *item) {
	name := toolName(it)
	if name == "" || it.ID == "" {
		return
	}
	switch typ {
	case "item.started":
		s.started[it.ID] = true
		s.calls.Use("", it.ID, name)
	case "item.completed":
		if !s.started[it.ID] {
			s.calls.Use("", it.ID, name)
		}
		delete(s.started, it.ID)
		s.calls.Result(it.ID, it.Status == "failed" || it.Status == "declined" || it.Exit != nil && *it.Exit != 0)
	}
}

// toolName names a tool item's tool ("" for an item that is no tool call):
// an MCP tool by its own name, the others by their item type.
func toolName(it *item) string {
	switch it.Type {
	case "command_execution", "file_change", "web_search":
		return it.Type
	case "mcp_tool_call":
		if it.Tool != "" {
			return it.Tool
		}
		return it.Type
	}
	return ""
}

func exitNote(it *item) string {
	if it.Exit == nil {
		return "\n(" + it.Status + ")"
	}
	return fmt.Sprintf("\n(exit %d)", *it.Exit)
}

// outcome decides how the turn ended, given how the process exited
// (exitDiag is "" for a clean exit).
func (s *stream) outcome(exitDiag string) (engine.TurnStatus, []string) {
	diag := append([]string(nil), s.diag...)
	ok := !s.malformed && len(s.failed) == 0
	if exitDiag != "" {
		diag = append(diag, exitDiag)
		ok = false
	}
	if !s.completed && len(s.failed) == 0 {
		diag = append(diag, "the stream ended without turn.completed")
		ok = false
	}
	if ok && strings.TrimSpace(s.answer) == "" {
		diag = append(diag, "no answer: codex wrote no agent message with text")
		ok = false
	}
	if ok {
		return engine.Completed, diag
	}
	return engine.Failed, diag
}

func clip(s string) string {
	if len(s) > 120 {
		return strings.ToValidUTF8(s[:120], "") + "…"
	}
	return s
}
