package serve

import (
	"context"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/runner"
)

// flow serve --temporal (docs/temporal.md): with a runner.Temporal backend
// every run is walked on Temporal and mirrored into the runs directory, so
// the page, the API and the metrics read it as any other. Schedules become Temporal Schedules,
// which fire whether or not a server runs; the server mirrors the runs
// they start as it sees them. Shutting down detaches from the mirrored
// runs (they go on), and the next server re-attaches.

// start runs a job through the backend: a run a Temporal Schedule
// started is attached to, a run the last server left is resumed, any other
// is started.
func (r *runs) start(ctx context.Context, a *active, opts engine.Options) (*engine.Result, error) {
	s := r.s
	if a.adopt {
		return s.cfg.Backend.Attach(ctx, s.cfg.RunsDir, a.id, opts)
	}
	// A run handed to Temporal carries its trigger (memo, search attribute).
	ctx = runner.WithTrigger(ctx, a.trigger)
	if a.resumeDir != "" {
		return s.cfg.Backend.Resume(ctx, a.resumeDir, s.host(), opts)
	}
	opts.Input = a.input
	return s.cfg.Backend.Start(ctx, a.plan, s.host(), opts)
}

// syncSchedules makes the Temporal Schedules those of the catalogue.
func (s *Server) syncSchedules() {
	scheduled := map[string]runner.Scheduled{}
	for _, e := range s.catalog.all() {
		if e.Broken() || e.Plan.Root.Schedule == nil {
			continue
		}
		scheduled[e.Name] = runner.Scheduled{Plan: e.Plan, Host: s.host(), Opts: s.cfg.Engine}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.schedules.Sync(ctx, scheduled); err != nil {
		s.log.Error("syncing Temporal Schedules", "err", err)
		s.problem("syncing Temporal Schedules: " + err.Error())
		return
	}
	s.log.Info("Temporal Schedules synced", "flows", len(scheduled))
}

// adoptFired mirrors the runs the Temporal Schedules started, every Poll,
// until ctx ends.
func (s *Server) adoptFired(ctx context.Context) {
	t := time.NewTicker(s.cfg.Poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		fired, err := s.schedules.Fired(ctx)
		if err != nil && ctx.Err() == nil {
			s.log.Warn("reading Temporal Schedules", "err", err)
		}
		for _, f := range fired {
			if a, _ := s.runs.get(f.Run); a != nil {
				continue
			}
			if _, ok := rundir.Find(s.cfg.RunsDir, f.Run); ok {
				continue // mirrored already (or being re-attached)
			}
			if s.runs.adopt(&job{id: f.Run, flow: f.Flow, trigger: TriggerSchedule, adopt: true}) {
				at := f.At
				if at.IsZero() {
					at = time.Now()
				}
				s.metrics.fires.WithLabelValues(f.Flow, "started").Inc()
				s.sched.note(Record{Type: RecordFire, Flow: f.Flow, Run: f.Run, At: at, Trigger: TriggerSchedule, Reason: "fired on Temporal"})
			}
		}
	}
}

// adopt starts mirroring a run a Temporal Schedule started: at once, as
// Temporal runs it whatever the server's cap (the schedule's overlap
// bounds it). A run let go while it waits, followed again to be stopped,
// starts the same way: a stop does not wait for a slot.
func (r *runs) adopt(j *job) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.active[j.id] != nil {
		return false
	}
	j.queued = time.Now()
	r.startLocked(j)
	return true
}

// nextFire is a flow's next fire: Temporal's for a Temporal Schedule.
func (s *Server) nextFire(e *flows.Flow) time.Time {
	if s.schedules == nil {
		return s.sched.next(e.Name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return s.schedules.NextFire(ctx, e.Name)
}
