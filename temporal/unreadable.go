package temporal

import (
	"time"

	"go.temporal.io/sdk/workflow"
)

// Pauses between the schedules of an activity whose workers could not
// open its payloads (untilOpened).
const (
	reopenFirst = 10 * time.Second
	reopenMax   = 2 * time.Minute
)

// untilOpened schedules an activity (schedule) and gets its result into
// out. An activity whose every attempt went to a worker that could not
// open its payloads — a worker with another temporal.key, or none — is
// not the visit's failure but a misconfigured worker's: it is scheduled
// again after a pause (10 s, doubling to 2 min), until a worker with the
// key takes it or the walk is cancelled (docs/temporal.md, What Temporal
// keeps). The failures are what flow show says meanwhile (the mirror
// reads them off the pending activity).
//
// Deterministic and needing no version: an earlier release never failed
// an activity with a PayloadError, so no recorded history takes the
// branch that schedules again.
func untilOpened(w workflow.Context, schedule func() workflow.Future, out any) error {
	pause := reopenFirst
	for {
		err := schedule().Get(w, out)
		if err == nil || !unreadable(err) || w.Err() != nil {
			return err
		}
		workflow.GetLogger(w).Warn("no worker that took the activity could open its payloads; scheduling it again", "pause", pause, "error", err)
		if serr := workflow.Sleep(w, pause); serr != nil {
			return err
		}
		pause = min(2*pause, reopenMax)
	}
}
