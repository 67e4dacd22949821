package agentcli

import (
	"context"
	"fmt"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/steps/transcript"
)

// Stream is a driver's reader of its CLI's stdout: it is fed every line, in
// order, and then says how the turn went.
type Stream interface {
	// Feed reads line n (counted from 1), newline included.
	Feed(n int, line []byte)
	// Outcome is what the stream says once it has ended.
	Outcome() Outcome
}

// Outcome is what a CLI's stream says about a turn: the status, answer,
// usage, diagnostics and session it reported, and the steps to show in the
// readable transcript.
type Outcome struct {
	Status      engine.TurnStatus
	Output      string
	Usage       record.Usage
	Diagnostics []string
	Session     string
	Steps       []transcript.Step
}

// Turn runs one turn of a CLI whose stream decides the outcome (pi,
// claude: both exit 0 on a failed turn, so the exit status says little) and
// keeps its transcript. The stream's outcome stands unless the CLI started
// another session than the one the turn continues, exited uncleanly
// (Failed) or was cancelled (Aborted, and Turn returns context.Cause with
// the result). The transcript is redacted of key; a turn without a home
// keeps none, and one that cannot be written is a diagnostic, never a
// reason to fail the turn. An error without a result means the CLI never
// ran (see Run).
func Turn(ctx context.Context, t *engine.Turn, c Command, s Stream, key string) (*engine.TurnResult, error) {
	log, logErr := openTranscript(t, c.Name, key)
	defer log.Close()
	c.Transcript = log
	if t.Delegate != nil && c.Started == nil {
		c.Started = t.Delegate.Bind
	}

	t.Progress(engine.Progress{Activity: "starting " + c.Name})
	start := time.Now()
	exit, err := Run(ctx, c, s.Feed)
	if err != nil {
		return nil, err
	}
	o := s.Outcome()
	res := &engine.TurnResult{Status: o.Status, Output: o.Output, Usage: o.Usage, Diagnostics: o.Diagnostics,
		Stderr: exit.Stderr, Session: o.Session, Transcript: log.Path()}
	res.Usage.WallMS = time.Since(start).Milliseconds()
	if t.Session != "" && o.Session != "" && o.Session != t.Session {
		res.Status = engine.Failed
		res.Diagnostics = append(res.Diagnostics, fmt.Sprintf("%s started session %s instead of continuing %s", c.Name, o.Session, t.Session))
	}
	rerr := exit.Settle(ctx, res)
	if logErr != nil {
		res.Diagnostics = append(res.Diagnostics, logErr.Error())
	}
	if err := log.End(res, o.Steps); err != nil {
		res.Diagnostics = append(res.Diagnostics, err.Error())
	}
	return res, rerr
}

// openTranscript opens the transcript of the turn's agent, or none (nil)
// for a turn without a home.
func openTranscript(t *engine.Turn, driver, key string) (*transcript.Log, error) {
	if t.Home == "" {
		return nil, nil
	}
	log, err := transcript.Open(t.Home, t.Agent.Name, transcript.Header{Visit: t.Visit, Driver: driver, Model: t.Model,
		Session: t.Session, Started: time.Now(), System: t.Agent.Instructions, Prompt: t.Prompt}, t.Secrets)
	if err != nil {
		return nil, err
	}
	log.Redact(key)
	return log, nil
}
