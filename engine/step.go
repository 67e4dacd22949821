package engine

import (
	"context"
	"time"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/internal/secret"
)

// Driver turns one agent turn into a real subagent process or request.
// Drivers are registered by name from cmd (no init side effects) and must be
// safe for concurrent use: the engine calls Turn from many visits at once.
//
// Turn blocks until the turn ends or ctx is done. The Turn is the engine's:
// a driver reads it and never changes it. On cancellation the driver
// ends everything it started (SIGTERM to the process group, SIGKILL after 5 s)
// before it returns. The engine applies timeouts, retries and budgets at the
// visit boundary; a driver only reports what happened.
type Driver interface {
	Turn(ctx context.Context, t *Turn) (*TurnResult, error)
}

// Turn is one agent turn as the engine hands it to a driver.
type Turn struct {
	RunID string
	Visit string // the visit path, e.g. "review#2/verdict"
	Agent *flows.Agent
	Model string // resolved with the precedence of docs/flow-files.md, agent; "" = the driver's default
	// Prompt is the whole turn text: the node's prompt, its reads, the output
	// instruction and the working directory.
	Prompt string
	// OutputSchema is the JSON Schema of the node's typed output, or nil.
	OutputSchema []byte
	// Home is the memory scope's (or the visit's) home directory in the run
	// directory. It is created on first use, not by the engine: a driver
	// that writes there calls os.MkdirAll(Home) first, so visits that write
	// nothing cost no directory.
	Home    string
	WorkDir string // where the agent works
	Timeout time.Duration
	// Session names the driver session to continue for a memory scope, "" for a
	// fresh one. The driver returns the session to continue next time.
	Session  string
	Progress func(Progress) // never nil
	// Secrets are the run's secrets: whatever a driver writes into Home
	// goes through them (transcript.Open and transcript.NewAnswer take
	// them). The engine also redacts Home when the visit ends, for what
	// an agent CLI writes there itself. nil redacts nothing.
	Secrets *secret.Redactor
	// Watch, when set, reports whether the turn's live token count crosses
	// a budget above it, counting what ended turns spent and what the other
	// running turns hold; the LeafRunner then stops the turn (ErrBudget).
	// TokensLeft is the most the turn may spend as it starts (0: no token
	// budget): on a blind Host (a Temporal worker, Parts.Blind), which cannot call
	// Watch, the turn's reservation (docs/resume-and-budgets.md). Drivers
	// ignore both.
	Watch      func(live int64) bool
	TokensLeft int64
	// Affords, when set, says whether the turn, having spent live tokens,
	// may send one more request expected to cost next tokens under the
	// budgets above it. A driver that sees each request before it goes
	// out (the codex driver's meter) refuses the one it says no to, and
	// its turn then fails ErrBudget (docs/resume-and-budgets.md). The
	// walker sets it with Watch; a LeafRunner given only TokensLeft sets
	// it from that.
	Affords func(live, next int64) bool
	// Key is the visit's key (docs/reuse-and-tests.md), nil when the
	// visit may not be reused (an isolated scope).
	Key *flows.VisitKey
	// Delegate, when set, is what the turn may delegate: the driver offers
	// the agent the delegate tool (docs/delegation.md).
	Delegate *Delegation
	// Tools journals the tool calls of a driver that runs them itself
	// (docs/native.md); nil on a host that cannot.
	Tools *record.ToolLog
}

// TurnStatus is how a turn ended (docs/drivers.md).
type TurnStatus string

// The turn statuses.
const (
	Completed TurnStatus = "completed"
	Failed    TurnStatus = "failed"
	Aborted   TurnStatus = "aborted"
)

// TurnResult is what a driver returns for one turn.
//
// An answer longer than AnswerLimit is stored once, in a file in the
// turn's Home (rundir.CreateAnswerFile), and only its first AnswerLimit bytes are
// held: Output is that prefix, File the file, Size the whole answer's
// length. A driver that returns a longer Output without a File has it
// written to a file by the LeafRunner, at the cost of having held it
// whole. A typed answer (Turn.OutputSchema) is handed on whole up to
// TypedLimit.
type TurnResult struct {
	Status      TurnStatus
	Output      string
	File        string // where the whole answer is, when Output is only its start
	Size        int64  // the whole answer's length in bytes, when File is set
	Usage       record.Usage
	Transcript  string   // path of the transcript written in Home, if any
	Diagnostics []string // ordered, human-readable
	Stderr      string
	Session     string // the session to continue for memory, if the driver has one
	// Worker names where a remote LeafRunner ran the turn (a Temporal
	// worker's own task queue); "" in this process.
	Worker string
	// Reused names the recorded visit that answered the turn instead of
	// a driver (package reuse); its Usage is then zero.
	Reused *record.Reused
}

// Progress is one live update from a running visit: what it is doing now.
type Progress struct {
	Activity string // e.g. "running go test", "using grep", "writing"
	Tokens   int64  // tokens so far, if known
}

// Commander runs the command of a `run:` node.
type Commander interface {
	Run(ctx context.Context, c *Command) (*CommandResult, error)
}

// Command is one `run:` visit. Exactly one of Argv and Script is set.
type Command struct {
	RunID    string
	Visit    string
	Argv     []string // run directly, no shell
	Script   string   // run with bash -c
	Dir      string
	Home     string // the visit's home directory; create it (os.MkdirAll) before writing there
	Env      []string
	Sandbox  bool           // run confined (the node's sandbox: on, docs/native.md)
	Progress func(Progress) // never nil
	// Timeout bounds the command; the LeafRunner applies it (ErrTimeout).
	Timeout time.Duration
	// Key is the visit's key; Reuse says a recorded result may answer
	// it (the node says `reuse: true`).
	Key   *flows.VisitKey
	Reuse bool
}

// CommandResult is the output of a `run:` node: a non-zero exit is a value.
type CommandResult struct {
	Passed bool   `json:"passed"`
	Exit   int    `json:"exit"`
	Report string `json:"report"` // the last 8000 bytes of stdout and stderr, interleaved
	// Worker names where a remote LeafRunner ran the command; not part of
	// the node's output.
	Worker string `json:"-"`
	// Reused names the recorded visit that answered the command.
	Reused *record.Reused `json:"-"`
}

// ErrUnavailable is wrapped by a Commander or Driver whose program could not
// be started (not found, not executable): failure kind `unavailable`.
var ErrUnavailable = errUnavailable{}

type errUnavailable struct{}

func (errUnavailable) Error() string { return "unavailable" }
