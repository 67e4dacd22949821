package serve

import (
	"context"
	"errors"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/temporal"
)

// flow serve --temporal (docs/temporal.md): every run is walked on
// Temporal and mirrored into the runs directory, so the page, the API and
// the metrics read it as any other. Schedules become Temporal Schedules,
// which fire whether or not a server runs; the server mirrors the runs
// they start as it sees them. Shutting down detaches from the mirrored
// runs (they go on), and the next server re-attaches.

// start runs a job through the engine, or on Temporal.
func (r *runs) start(ctx context.Context, a *active, opts engine.Options) (*engine.Result, error) {
	s, tc := r.s, r.s.cfg.Temporal
	switch {
	case a.adopt:
		return tc.Adopt(ctx, s.cfg.RunsDir, a.id, opts.OnEvent)
	case a.resumeDir != "" && tc != nil:
		res, err := tc.Attach(ctx, a.resumeDir, opts.OnEvent)
		if !errors.Is(err, temporal.ErrNotTemporal) {
			return res, err
		}
		fallthrough // a run walked here before the server ran with --temporal
	case a.resumeDir != "":
		opts.RunID, opts.RunsDir = "", ""
		return engine.Resume(ctx, a.resumeDir, s.cfg.Load, opts)
	case tc != nil:
		opts.Input = a.input
		return tc.Execute(ctx, a.plan, opts)
	}
	opts.Input = a.input
	return engine.Execute(ctx, a.plan, opts)
}

// stopCause is how shutdown ends the runs: stopped here, detached from
// Temporal's, which go on.
func (s *Server) stopCause() error {
	if s.cfg.Temporal != nil {
		return temporal.ErrDetached
	}
	return engine.ErrStopped
}

// syncSchedules makes the Temporal Schedules those of the catalogue.
func (s *Server) syncSchedules() {
	scheduled := map[string]temporal.Scheduled{}
	for _, e := range s.catalog.all() {
		if e.Broken() || e.Plan.Root.Schedule == nil {
			continue
		}
		opts := s.cfg.Engine
		opts.WorkDir = s.cfg.WorkDir
		scheduled[e.Name] = temporal.Scheduled{Plan: e.Plan, Opts: opts}
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
				s.sched.note(Record{Type: RecordFire, Flow: f.Flow, Run: f.Run, At: time.Now(), Trigger: TriggerSchedule, Reason: "fired on Temporal"})
			}
		}
	}
}

// adopt starts mirroring a run a Temporal Schedule started: at once, as
// Temporal runs it whatever the server's cap (the schedule's overlap
// bounds it).
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
