package native

import (
	"context"
	"fmt"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/steps/openai"
	"github.com/flowrun/flow/steps/usage"
)

// notRun is the result of a call an interrupted answer made that no fact
// records: it was not made, and is not made now.
const notRun = "not run: the run was interrupted before this call; call it again if it is still needed"

// resume continues the calls an earlier attempt of the run recorded for
// this turn (Turn.Tools.Earlier) when they are of the same turn — the
// same first request —: the conversation is rebuilt from their facts,
// each answer's usage counts again (the interrupted attempt recorded no
// end), and the next request is the first one not answered. No call is
// made again.
func (c *conv) resume(ctx context.Context) {
	if c.t.Tools == nil || len(c.t.Tools.Earlier) == 0 {
		return
	}
	calls := c.t.Tools.Earlier
	if calls[0].Opening != c.opening {
		c.log.Record(map[string]any{"resumed": map[string]any{"turn": calls[0].Turn, "continued": false,
			"why": "the turn's first request is not the one the recorded calls answered"}})
		return
	}
	c.turn = calls[0].Turn
	for i := 0; i < len(calls); {
		j := i
		for j < len(calls) && calls[j].Step == calls[i].Step {
			j++
		}
		c.replayStep(calls[i:j])
		i = j
	}
	if tree := calls[len(calls)-1].Tree; tree != "" {
		if err := restore(ctx, c.box.dir, tree); err != nil {
			c.notes = append(c.notes, "bringing the working copy back to the last recorded call: "+err.Error())
		}
	}
	c.log.Record(map[string]any{"resumed": map[string]any{"turn": c.turn, "continued": true, "calls": len(calls), "steps": c.step}})
	c.notes = append(c.notes, fmt.Sprintf("resumed after %d recorded tool calls, none made again", len(calls)))
}

// replayStep adds one recorded answer and its calls' results to the
// conversation.
func (c *conv) replayStep(step []record.ToolCall) {
	first := step[0]
	if first.Protocol == ProtocolText {
		c.useText()
	}
	batch := first.Batch
	if len(batch) == 0 {
		for _, s := range step {
			batch = append(batch, record.BatchCall{ID: s.ID, Name: s.Name, Args: s.Args})
		}
	}
	wire := make([]openai.Call, len(batch))
	for i, b := range batch {
		wire[i].ID, wire[i].Type = b.ID, "function"
		wire[i].Function.Name, wire[i].Function.Arguments = b.Name, b.Args
	}
	if c.protocol == ProtocolNative {
		c.msgs = append(c.msgs, openai.Message{Role: "assistant", Content: first.Said, ToolCalls: wire})
	} else {
		c.msgs = append(c.msgs, openai.Message{Role: "assistant", Content: first.Said})
	}
	for _, w := range wire {
		result, isErr := notRun, true
		for _, s := range step {
			if s.ID == w.ID {
				result, isErr = s.Result, s.Error
				c.seq = max(c.seq, s.Seq)
			}
		}
		c.msgs = append(c.msgs, c.resultMessage(w, result, isErr))
	}
	if u := first.Usage; u != nil {
		id := first.Response
		if id == "" {
			id = fmt.Sprintf("%s/step-%d", first.Turn, first.Step)
		}
		c.x.Ledger.Report(id, usage.Call{Input: u.Input, Output: u.Output, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite})
		c.x.Ledger.Final()
	}
	c.step = max(c.step, first.Step)
}
