package temporal

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/api/serviceerror"

	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/schema"
)

// ErrUnconfirmed says an event was signalled to a run on Temporal but no
// worker answered whether the run took it (none runs): the run takes it
// when one does, unless it has the event already.
var ErrUnconfirmed = errors.New("no worker confirmed the delivery yet")

// Deliver delivers event, with its JSON data, to the waits of the
// Temporal run mirrored in dir (docs/waits.md, On Temporal): a
// SignalEvent signal, sealed for the run's workflow, then the events
// query, which says whether the run kept this delivery, the same data
// delivered before (already), or other data (an error wrapping
// rundir.ErrSignalConflict), as rundir.Deliver says of a local run.
func (c *Client) Deliver(ctx context.Context, dir, event string, data []byte, by string) (already bool, err error) {
	if !schema.ValidEventName(event) {
		return false, fmt.Errorf("%q is not a valid event name: letters, digits, _, - and . (at most 128)", event)
	}
	canon, err := rundir.EventData(data)
	if err != nil {
		return false, fmt.Errorf("the data of event %s is not JSON: %w", event, err)
	}
	snap, err := rundir.ReadSnapshot(dir)
	if err != nil {
		return false, err
	}
	if snap.Temporal == nil {
		return false, fmt.Errorf("%s: %w", dir, ErrNotTemporal)
	}
	id := snap.Temporal.Workflow
	var raw [12]byte
	_, _ = rand.Read(raw[:])
	sig := EventSignal{Event: event, Data: canon, By: by, ID: hex.EncodeToString(raw[:])}
	// The run's current execution, whichever it is now (continue-as-new,
	// a resume in a new one).
	if err := c.Client.SignalWorkflow(ctx, id, "", SignalEvent, sig); err != nil {
		// A run that ended takes no signal; what it kept still says
		// whether this delivery is the one it had.
		kept, qerr := c.keptEvent(ctx, id, event, 0)
		if qerr != nil {
			return false, fmt.Errorf("delivering event %s to run %s on Temporal at %s: %w", event, id, c.Address, err)
		}
		return compareKept(kept, sig, event, id)
	}
	kept, err := c.keptEvent(ctx, id, event, 2*queryTimeout)
	if err != nil {
		return false, fmt.Errorf("event %s was signalled to run %s: %w (%v)", event, id, ErrUnconfirmed, err)
	}
	return compareKept(kept, sig, event, id)
}

// compareKept says what the delivery sig was: the one the run kept, the
// same data again (already), or other data (ErrSignalConflict).
func compareKept(kept *KeptEvent, sig EventSignal, event, id string) (already bool, err error) {
	switch {
	case kept.ID == sig.ID:
		return false, nil
	case bytes.Equal(kept.Data, sig.Data):
		return true, nil
	}
	return false, fmt.Errorf("event %s of run %s: %w (at %s)", event, id, rundir.ErrSignalConflict, kept.Time.Format(time.RFC3339))
}

// queryKept asks the run's workflow, once, for the events it kept (a
// query, answered by a worker).
func (c *Client) queryKept(ctx context.Context, id string) (map[string]KeptEvent, error) {
	qctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	v, err := c.Client.QueryWorkflow(qctx, id, "", QueryEvents)
	if err != nil {
		return nil, err
	}
	var kept map[string]KeptEvent
	return kept, v.Get(&kept)
}

// keptEvents are the events the run's last execution kept, for the
// execution that resumes it. It asks until a worker answers (the resumed
// run needs one too), saying once through note that it waits. A run
// whose history is gone, or whose workflow never answered the query
// (recorded before waits ran on Temporal), kept none.
func (c *Client) keptEvents(ctx context.Context, id string, note func(string)) (map[string]KeptEvent, error) {
	for noted := false; ; {
		kept, err := c.queryKept(ctx, id)
		var gone *serviceerror.NotFound
		var unknown *serviceerror.QueryFailed
		switch {
		case err == nil:
			return kept, nil
		case errors.As(err, &gone), errors.As(err, &unknown):
			return nil, nil
		case ctx.Err() != nil:
			return nil, fmt.Errorf("reading the events run %s kept on Temporal at %s: %w", id, c.Address, context.Cause(ctx))
		case !noted:
			note(fmt.Sprintf("waiting for a worker to say which events run %s kept (%v)", id, err))
			noted = true
		}
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// keptEvent reads what the run keeps of event, asking its workflow (a
// query, answered by a worker after the signal was taken), again
// while no worker answers, for up to patience.
func (c *Client) keptEvent(ctx context.Context, id, event string, patience time.Duration) (*KeptEvent, error) {
	deadline := time.Now().Add(patience)
	for {
		kept, err := c.queryKept(ctx, id)
		if err == nil {
			k, ok := kept[event]
			if !ok {
				// Taken after the query: a task of the run had not
				// read the signal yet.
				err = errors.New("the run has not taken the signal yet")
			} else {
				return &k, nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, err
		}
		time.Sleep(250 * time.Millisecond)
	}
}
