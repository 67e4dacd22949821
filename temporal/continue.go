package temporal

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
)

// continueChange is the workflow.GetVersion change id of continue-as-new:
// histories recorded before it replay along the old path, which walks in
// the main coroutine and never drains.
const continueChange = "continue-as-new"

// DefaultHistoryEvents is how long a run's workflow history grows before
// the run continues as new (Timing.HistoryEvents): far below Temporal's
// limit of 51,200 events, so that the activities in flight when it is
// reached end within it whatever they number.
const DefaultHistoryEvents = 10000

// maxCarried bounds the compressed facts a run carries into its next
// execution, under Temporal's 2 MB payload limit with the snapshot beside
// them. The facts of a `run:` visit compress to some tens of bytes.
const maxCarried = 1536 << 10

// continuePause is how long a drained execution stays open before it
// continues as new.
const continuePause = time.Second

// continuer lets a run continue as new when its history grew long: once
// the history has HistoryEvents events, no leaf schedules an activity any
// more (it waits, and its visit runs in the next execution); when the
// leaves in flight have ended, the workflow continues as new with the
// facts of the visits that ended, which the next execution's walk replays
// exactly as a resume replays the journal (docs/temporal.md, Scale).
// Workflow coroutines run one at a time: it needs no lock.
type continuer struct {
	enabled  bool
	limit    int
	draining bool
	inflight int
}

func newContinuer(ctx workflow.Context, limit int) *continuer {
	v := workflow.GetVersion(ctx, continueChange, workflow.DefaultVersion, 1)
	return &continuer{enabled: v >= 1, limit: limit}
}

// admit is called before a leaf schedules its activity, from the leaf's
// coroutine w. Past the limit it waits until w is cancelled (the run
// stopped), which it returns; the execution continues as new before that
// otherwise. A leaf that was admitted calls done when its activity ended.
// A delegated child is always admitted: its parent's turn, in flight,
// waits for it, so the execution cannot drain before it ends anyway.
func (c *continuer) admit(w workflow.Context, child bool) error {
	if c == nil || !c.enabled {
		return nil
	}
	if !c.draining && workflow.GetInfo(w).GetCurrentHistoryLength() >= c.limit {
		c.draining = true
	}
	if c.draining && !child {
		if err := workflow.Await(w, func() bool { return false }); err != nil {
			return err
		}
	}
	c.inflight++
	return nil
}

func (c *continuer) done() {
	if c != nil && c.enabled {
		c.inflight--
	}
}

// continued reads what an execution continued from its predecessor
// carries: the facts the walk replays after the run's own earlier ones
// (RunInput.Earlier, of a resume). The walk's first run fact is then not
// recorded: the run goes on, it did not start again.
func continued(ctx workflow.Context, in *RunInput, rec *recorder) (*continuer, []*record.Fact, error) {
	timing := in.Timing.withDefaults()
	cont := newContinuer(ctx, timing.HistoryEvents)
	carried, err := unpackFacts(in.Carried)
	if err != nil {
		return nil, nil, temporal.NewNonRetryableApplicationError("the facts carried from the run's previous execution do not read: "+err.Error(), "refused", nil)
	}
	if len(carried) == 0 {
		return cont, in.Earlier, nil
	}
	rec.skipRun, rec.before = true, in.Before
	return cont, append(slices.Clip(in.Earlier), carried...), nil
}

// errContinue ends a walk that continues in a new execution.
var errContinue = errors.New("the run continues as new")

// walk runs the walk. With continue-as-new it runs on a coroutine of its
// own, which the workflow leaves blocked when the execution is ready to
// continue as new (errContinue); histories from before run it on the
// workflow's own coroutine, as they were recorded.
func (c *continuer) walk(ctx workflow.Context, walk func(w workflow.Context) (*engine.Result, error)) (*engine.Result, error) {
	if !c.enabled {
		return walk(ctx)
	}
	var res *engine.Result
	var err error
	walked := false
	workflow.Go(ctx, func(w workflow.Context) {
		res, err = walk(w)
		walked = true
	})
	// Not cut short by the workflow's cancellation: the walk stops the
	// run then, and ends.
	wait, _ := workflow.NewDisconnectedContext(ctx)
	_ = workflow.Await(wait, func() bool { return walked || (c.ready() && ctx.Err() == nil) })
	if !walked {
		return nil, errContinue
	}
	return res, err
}

// ready says the execution may continue as new: it drains, and no leaf's
// activity is in flight.
func (c *continuer) ready() bool { return c.draining && c.inflight == 0 }

// next is the input of the next execution: the facts of this execution's
// ended visits (and of the executions before it) carried, compressed.
func (c *continuer) next(ctx workflow.Context, in *RunInput, carried []*record.Fact, rec *recorder) error {
	// The walk's coroutines are left blocked, and end when the execution
	// does: what they record then is not the run's.
	rec.frozen = true
	keep := carried
	for _, f := range rec.facts {
		// A wait's fact too: its time counts from when it was first reached.
		if f.Type != record.FactEnd && f.Type != record.FactLand && f.Type != record.FactWorktree && f.Type != record.FactWaiting {
			continue
		}
		g := *f
		// What the replay does not read stays in the journal.
		g.Key, g.WallMS, g.Worker, g.Transcript, g.Timeout = nil, 0, "", "", ""
		keep = append(keep, &g)
	}
	blob, err := packFacts(keep)
	if err != nil {
		return err
	}
	if len(blob) > maxCarried {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("the run's %d ended visits take %d KiB compressed, more than the %d KiB a run carries into its next execution",
			len(keep), len(blob)>>10, maxCarried>>10), "too_large", nil)
	}
	n := *in
	n.Carried, n.Before = blob, len(rec.facts)
	// A moment for the mirror to read the last facts while the execution
	// is open (a worker answers from its cache); a closed one's query is
	// answered by replaying its whole history.
	if err := workflow.Sleep(ctx, continuePause); err != nil {
		return err // cancelled in the pause: the workflow ends cancelled
	}
	return workflow.NewContinueAsNewError(ctx, WorkflowName, &n)
}

// packFacts is facts as gzipped JSON lines.
func packFacts(facts []*record.Fact) ([]byte, error) {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	enc := json.NewEncoder(zw)
	for _, f := range facts {
		if err := enc.Encode(f); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// unpackFacts undoes packFacts.
func unpackFacts(blob []byte) ([]*record.Fact, error) {
	if len(blob) == 0 {
		return nil, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(blob))
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(zr)
	var out []*record.Fact
	for {
		var f record.Fact
		if err := dec.Decode(&f); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, err
		}
		out = append(out, &f)
	}
}

// packBound is the size of a run's output and values, as JSON, above which
// the workflow's result carries them compressed.
const packBound = 256 << 10

type outputAndValues struct {
	Output any            `json:"output"`
	Values map[string]any `json:"values,omitempty"`
}

// packed returns out with its output and values compressed when they are
// long, and fails the run clearly when even so they pass Temporal's
// payload limit.
func packed(out *RunOutput) (*RunOutput, error) {
	raw, err := json.Marshal(outputAndValues{Output: out.Output, Values: out.Values})
	if err != nil || len(raw) <= packBound {
		return out, nil
	}
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = zw.Write(raw)
	if err := zw.Close(); err != nil {
		return nil, err
	}
	if b.Len() > maxCarried {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("the run's output and node values take %d KiB compressed, more than a workflow's result may (%d KiB)",
			b.Len()>>10, maxCarried>>10), "too_large", nil)
	}
	out.Output, out.Values, out.Packed = nil, nil, b.Bytes()
	return out, nil
}

// unpack undoes packed.
func (out *RunOutput) unpack() error {
	if len(out.Packed) == 0 {
		return nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(out.Packed))
	if err != nil {
		return err
	}
	var ov outputAndValues
	if err := json.NewDecoder(zr).Decode(&ov); err != nil {
		return err
	}
	out.Output, out.Values, out.Packed = ov.Output, ov.Values, nil
	return nil
}
