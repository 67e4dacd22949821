package temporal

import (
	"errors"
	"fmt"
	"strings"
	"time"

	workflowpb "go.temporal.io/api/workflow/v1"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/schema"
)

// Names under which workers register the run workflow, its activities and
// its query. A client and its workers must be built from the same flow.
const (
	WorkflowName    = "flow.run"
	TurnActivity    = "flow.turn"
	CommandActivity = "flow.command"
	QueryFacts      = "flow.facts"
	// DefaultTaskQueue is the shared task queue of runs and workers.
	DefaultTaskQueue = "flow"
)

// RunInput is the run workflow's input: the run's snapshot, from which the
// workflow rebuilds the plan (flows.Load of the snapshot reads no disk, so
// every worker rebuilds the same plan), and how to load and time it.
type RunInput struct {
	Snapshot *rundir.Snapshot `json:"snapshot"`
	Load     LoadOptions      `json:"load"`
	// Earlier holds the facts of earlier attempts when the run resumes in
	// a new workflow execution: ended visits keep their outcomes.
	Earlier []*record.Fact `json:"earlier,omitempty"`
	Timing  Timing         `json:"timing"`
	// Origin is the directory the client read the flow from: the
	// snapshot's relative paths (an agent file's, the flow file's) are
	// relative to it. Empty: the run's working directory.
	Origin string `json:"origin,omitempty"`
	// Attended says someone answers the run's asks (flow serve's page and
	// API, through the mirror): they wait for SignalAnswer. Otherwise an
	// ask takes its default.
	Attended bool `json:"attended,omitempty"`
	// Carried holds, compressed, the facts of the visits that ended in the
	// executions before this one when the run continued as new (its
	// history grew long): the walk replays them after Earlier.
	Carried []byte `json:"carried,omitempty"`
	// Before is how many facts the execution before this one recorded:
	// a mirror that has them all need not read that closed execution.
	Before int `json:"before,omitempty"`
	// Events are the events the execution before this one kept (waits.go),
	// when the run continued as new: they stay delivered.
	Events map[string]KeptEvent `json:"events,omitempty"`
	// Searchable says the run was started with flow's search attributes
	// (attrs.go): the workflow sets its status attribute when it ends.
	Searchable bool `json:"searchable,omitempty"`
}

// LoadOptions are the flows.Options a workflow loads the snapshot with.
type LoadOptions struct {
	DefaultDriver string   `json:"default_driver"`
	Drivers       []string `json:"drivers"`
}

// Timing bounds the activities of a run's visits. The zero value of each
// field has a documented default.
type Timing struct {
	// Heartbeat is the heartbeat timeout of a visit's activity: a worker
	// silent that long is taken for dead, and the visit is retried on
	// another worker. Default 30 s; workers heartbeat every third of it.
	Heartbeat time.Duration `json:"heartbeat,omitempty"`
	// SessionWait is how long a memory scope's later turn waits for the
	// worker that holds its session (its schedule-to-start timeout) before
	// the visit fails `unavailable`. Default 1 minute.
	SessionWait time.Duration `json:"session_wait,omitempty"`
	// Grace is added to a leaf's own timeout for the activity's
	// start-to-close timeout, so that a timeout is the flow's `timeout`,
	// never Temporal's. Default 1 minute.
	Grace time.Duration `json:"grace,omitempty"`
	// Attempts is how many times a visit's activity runs after
	// infrastructure failures (a dead worker); default 3. Flow's own
	// `retry:` is the walker's, on the workflow's clock.
	Attempts int `json:"attempts,omitempty"`
	// Backoff is the first delay of flow's `retry:`; default 1 s.
	Backoff time.Duration `json:"backoff,omitempty"`
	// HistoryEvents is how many events a run's workflow history holds
	// before the run continues as new; default DefaultHistoryEvents.
	HistoryEvents int `json:"history_events,omitempty"`
}

func (t Timing) withDefaults() Timing {
	if t.Heartbeat <= 0 {
		t.Heartbeat = 30 * time.Second
	}
	if t.SessionWait <= 0 {
		t.SessionWait = time.Minute
	}
	if t.Grace <= 0 {
		t.Grace = time.Minute
	}
	if t.Attempts <= 0 {
		t.Attempts = 3
	}
	if t.Backoff <= 0 {
		t.Backoff = time.Second
	}
	if t.HistoryEvents <= 0 {
		t.HistoryEvents = DefaultHistoryEvents
	}
	return t
}

// RunOutput is how the run workflow ended: what engine.Result says.
type RunOutput struct {
	OK      bool            `json:"ok"`
	Status  record.Status   `json:"status"`
	Output  any             `json:"output"`
	Failure *record.Failure `json:"error,omitempty"`
	Usage   record.Usage    `json:"usage"`
	// Values are the run's node values (engine.Recorder.WriteValues), which the
	// mirror writes to values.json.
	Values map[string]any `json:"values,omitempty"`
	// Overspend names each budget the run ended above (its end fact's).
	Overspend []record.Overspend `json:"overspend,omitempty"`
	// Packed holds Output and Values compressed when they are long (a
	// map of thousands of items): see packed.
	Packed []byte `json:"packed,omitempty"`
}

// FactsPage is what the facts query returns: the facts from From on, at
// most a page of them; Total is how many the workflow holds.
type FactsPage struct {
	Facts []*record.Fact `json:"facts"`
	Total int            `json:"total"`
	// Before is how many facts the execution this one continued recorded
	// (RunInput.Before).
	Before int `json:"before,omitempty"`
}

// TurnInput is one agent turn as an activity gets it: engine.Turn without
// what cannot travel (Progress, Watch) and with its home named by path.
type TurnInput struct {
	RunID        string       `json:"run"`
	Visit        string       `json:"visit"`
	Agent        *flows.Agent `json:"agent"`
	Model        string       `json:"model,omitempty"`
	Prompt       string       `json:"prompt"`
	OutputSchema []byte       `json:"output_schema,omitempty"`
	Home         string       `json:"home"` // the visit's or scope's path: its home in the worker's run directory
	// WorkDir is the run's working directory as the run recorded it; the
	// worker maps it, and the agent's Source under it, through its
	// --workdir (Activities.local).
	WorkDir    string        `json:"workdir"`
	Timeout    time.Duration `json:"timeout"`
	Session    string        `json:"session,omitempty"` // the driver's own session to continue
	TokensLeft int64         `json:"tokens_left,omitempty"`
	// KeyEnvs name the variables the run's agents take their keys from:
	// the worker redacts their values (its own) as a local run does.
	KeyEnvs []string  `json:"key_envs,omitempty"`
	Scope   *ScopeRef `json:"scope,omitempty"` // an isolated scope's: the worker makes its working copy
	// Delegate is set for a turn that may delegate: the worker serves its
	// calls and carries them to the workflow (temporal/delegate.go).
	Delegate *TurnDelegation `json:"delegate,omitempty"`
}

// TurnOutput is how a turn ended on a worker. A turn's own ends (its
// timeout, a budget, a provider error) are values, never activity errors:
// Temporal retries infrastructure failures only.
type TurnOutput struct {
	Result *engine.TurnResult `json:"result,omitempty"`
	Ended  *Ended             `json:"ended,omitempty"`
	Worker string             `json:"worker"` // the worker's own task queue
	// Sent are the earlier attempts of this activity, whose workers died
	// before they ended (as their last heartbeats tell).
	Sent []record.Sent `json:"sent,omitempty"`
}

// CommandInput is one `run:` visit as an activity gets it.
type CommandInput struct {
	RunID   string        `json:"run"`
	Visit   string        `json:"visit"`
	Argv    []string      `json:"argv,omitempty"`
	Script  string        `json:"script,omitempty"`
	Dir     string        `json:"dir"`
	Home    string        `json:"home"`
	Env     []string      `json:"env,omitempty"`
	Timeout time.Duration `json:"timeout"`
	KeyEnvs []string      `json:"key_envs,omitempty"` // as TurnInput's
	Scope   *ScopeRef     `json:"scope,omitempty"`
	Sandbox bool          `json:"sandbox,omitempty"` // the node's sandbox: on
}

// CommandOutput is how a command ended on a worker.
type CommandOutput struct {
	Result *engine.CommandResult `json:"result,omitempty"`
	Ended  *Ended                `json:"ended,omitempty"`
	Worker string                `json:"worker"`
}

// Ended is a leaf's error as it travels: its kind and message.
type Ended struct {
	Kind    string `json:"kind"` // timeout, budget, unavailable, rate_limit, provider
	Message string `json:"message"`
}

// Error kinds of Ended.
const (
	endTimeout     = "timeout"
	endBudget      = "budget"
	endUnavailable = "unavailable"
	endProvider    = "provider"
	endRateLimit   = "rate_limit"
)

// ended packs a LeafRunner's error.
func ended(err error) *Ended {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, engine.ErrTimeout):
		return &Ended{Kind: endTimeout, Message: err.Error()}
	case errors.Is(err, engine.ErrBudget):
		return &Ended{Kind: endBudget, Message: err.Error()}
	case errors.Is(err, engine.ErrUnavailable):
		return &Ended{Kind: endUnavailable, Message: err.Error()}
	case errors.Is(err, record.ErrRateLimit):
		return &Ended{Kind: endRateLimit, Message: err.Error()}
	}
	return &Ended{Kind: endProvider, Message: err.Error()}
}

// err unpacks it into an error the walker classifies as the worker's
// LeafRunner meant it.
func (e *Ended) err() error {
	if e == nil {
		return nil
	}
	switch e.Kind {
	case endTimeout:
		return fmt.Errorf("%w (on the worker)", engine.ErrTimeout)
	case endBudget:
		return fmt.Errorf("%w (on the worker)", engine.ErrBudget)
	case endUnavailable:
		return &remoteError{msg: e.Message, kind: engine.ErrUnavailable}
	case endRateLimit:
		if q, ok := strings.CutPrefix(e.Message, schema.QuotaPrefix); ok {
			return &record.QuotaError{Message: q}
		}
		return &remoteError{msg: e.Message, kind: record.ErrRateLimit}
	}
	return &remoteError{msg: e.Message}
}

// remoteError is a worker's error message, wrapping the sentinel it wrapped
// there.
type remoteError struct {
	msg  string
	kind error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.kind }

// Progress is a visit's heartbeat: what the mirror shows as live progress.
type Progress struct {
	Visit    string `json:"visit"`
	Driver   string `json:"driver,omitempty"`
	Model    string `json:"model,omitempty"`
	Activity string `json:"activity,omitempty"`
	Tokens   int64  `json:"tokens,omitempty"`
	// Worker is the own queue of the worker that runs the attempt, and
	// Attempt which attempt of the activity it is: a later attempt reads
	// them off the heartbeat its predecessor left. A heartbeat's second
	// value is the attempts sent before it ([]rundir.Sent).
	Worker  string `json:"worker,omitempty"`
	Attempt int32  `json:"attempt,omitempty"`
	// Home is the visit's home on the worker's machine, where flow tail
	// finds a running visit's transcript.
	Home string `json:"home,omitempty"`
}

// sessionSep joins a worker's own queue and a driver's session into the
// session the walker keeps for a memory scope: the scope's later turns go
// to the queue of the worker that holds the session.
const sessionSep = "|"

func joinSession(queue, session string) string { return queue + sessionSep + session }

// splitSession undoes joinSession; a session without a queue (recorded by
// a local run that is now resumed on Temporal) has no worker.
func splitSession(s string) (queue, session string) {
	q, sess, ok := strings.Cut(s, sessionSep)
	if !ok {
		return "", s
	}
	return q, sess
}

// PendingActivity is what Temporal says of an activity in flight.
type PendingActivity = workflowpb.PendingActivityInfo
