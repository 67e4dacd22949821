package temporal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/local"
	"github.com/flowrun/flow/flows"
)

// Schedules keeps one Temporal Schedule per scheduled flow of a directory
// (flow serve --temporal): Temporal fires them, also while no flow serve
// runs, and each fire starts the run workflow with the flow's snapshot as
// it was when the schedule was last synced. Safe for concurrent use.
type Schedules struct {
	c      *Client
	prefix string // schedule ids: prefix + flow name

	mu    sync.Mutex
	known map[string]string // schedule id -> flow, as synced by this process
}

// NewSchedules returns the schedules of the flows of dir (an absolute
// path names the directory in the schedules' ids).
func (c *Client) NewSchedules(dir string) *Schedules {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	sum := sha256.Sum256([]byte(abs))
	return &Schedules{c: c, prefix: "flow-" + hex.EncodeToString(sum[:4]) + "-", known: map[string]string{}}
}

// Scheduled is a flow to keep a schedule for: its plan, and the host's
// wiring and the engine options its runs would get (the working directory
// and settings for the snapshot).
type Scheduled struct {
	Plan *flows.Plan
	Host local.Config
	Opts engine.Options
}

// Sync makes the schedules those of flows (by name): it creates or
// updates one per flow and deletes the directory's others. Errors name
// the flow; the other schedules are still synced.
func (s *Schedules) Sync(ctx context.Context, scheduled map[string]Scheduled) error {
	var errs []error
	want := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(scheduled)) {
		id := s.prefix + name
		want[id] = true
		if err := s.put(ctx, id, name, scheduled[name]); err != nil {
			errs = append(errs, fmt.Errorf("scheduling %s on Temporal: %w", name, err))
		}
	}
	ids, err := s.listed(ctx)
	if err != nil {
		errs = append(errs, err)
	}
	for _, id := range ids {
		if want[id] {
			continue
		}
		if err := s.c.Client.ScheduleClient().GetHandle(ctx, id).Delete(ctx); err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting the schedule %s: %w", id, err))
		}
		s.mu.Lock()
		delete(s.known, id)
		s.mu.Unlock()
	}
	return errors.Join(errs...)
}

func (s *Schedules) put(ctx context.Context, id, name string, sc Scheduled) error {
	sched := sc.Plan.Root.Schedule
	opts := sc.Opts
	opts.RunID, opts.Input = "", sched.Input // the workflow's id names each fired run
	snap, err := local.Snapshot(sc.Plan, sc.Host, opts)
	if err != nil {
		return err
	}
	spec, policy := scheduleSpec(sched)
	origin, _ := os.Getwd() // the snapshot's relative paths are this server's
	searchable := s.c.searchable(ctx)
	action := &client.ScheduleWorkflowAction{ID: id, Workflow: WorkflowName, TaskQueue: s.c.queue(),
		Memo: memo(snap, TriggerSchedule), Args: []any{&RunInput{Snapshot: snap, Load: s.c.Load, Timing: s.c.Timing, Origin: origin, Attended: true, Searchable: searchable}}}
	if searchable {
		action.TypedSearchAttributes = startAttrs(snap.Flow, TriggerSchedule)
	}
	_, err = s.c.Client.ScheduleClient().Create(ctx, client.ScheduleOptions{ID: id, Spec: spec, Action: action,
		Overlap: policy.Overlap, CatchupWindow: policy.CatchupWindow, Memo: map[string]any{"flow": name}})
	if errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		err = s.c.Client.ScheduleClient().GetHandle(ctx, id).Update(ctx, client.ScheduleUpdateOptions{
			DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
				sch := in.Description.Schedule
				sch.Spec, sch.Action = &spec, action
				if sch.Policy == nil {
					sch.Policy = &client.SchedulePolicies{}
				}
				sch.Policy.Overlap, sch.Policy.CatchupWindow = policy.Overlap, policy.CatchupWindow
				return &client.ScheduleUpdate{Schedule: &sch}, nil
			}})
	}
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.known[id] = name
	s.mu.Unlock()
	return nil
}

// listed returns the ids of the directory's schedules Temporal lists, and
// those this process synced (listing is eventually consistent).
func (s *Schedules) listed(ctx context.Context) ([]string, error) {
	seen := map[string]bool{}
	s.mu.Lock()
	for id := range s.known {
		seen[id] = true
	}
	s.mu.Unlock()
	it, err := s.c.Client.ScheduleClient().List(ctx, client.ScheduleListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing schedules: %w", err)
	}
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("listing schedules: %w", err)
		}
		if strings.HasPrefix(e.ID, s.prefix) {
			seen[e.ID] = true
		}
	}
	return slices.Sorted(maps.Keys(seen)), nil
}

// Fired is a run a schedule started.
type Fired struct {
	Flow string
	Run  string // the workflow id, which is the run id
	// At is when the fire was due (the schedule's time for it, which the
	// workflow id ends with), not when it was noticed.
	At time.Time
}

// Fired lists the runs the directory's schedules started recently or that
// still run, for flow serve to mirror.
func (s *Schedules) Fired(ctx context.Context) ([]Fired, error) {
	s.mu.Lock()
	known := make(map[string]string, len(s.known))
	for id, flow := range s.known {
		known[id] = flow
	}
	s.mu.Unlock()
	var out []Fired
	for _, id := range slices.Sorted(maps.Keys(known)) {
		d, err := s.c.Client.ScheduleClient().GetHandle(ctx, id).Describe(ctx)
		if err != nil {
			return out, fmt.Errorf("reading the schedule %s: %w", id, err)
		}
		seen := map[string]bool{}
		add := func(wid string, at time.Time) {
			if wid != "" && !seen[wid] {
				seen[wid] = true
				if at.IsZero() {
					at = dueOf(id, wid)
				}
				out = append(out, Fired{Flow: known[id], Run: wid, At: at})
			}
		}
		for _, a := range d.Info.RecentActions {
			if a.StartWorkflowResult != nil {
				add(a.StartWorkflowResult.WorkflowID, a.ScheduleTime)
			}
		}
		for _, w := range d.Info.RunningWorkflows {
			add(w.WorkflowID, time.Time{})
		}
	}
	return out, nil
}

// dueOf reads a fire's due time off the id Temporal gives its workflow:
// the schedule's id, a dash, and the time; zero if it does not parse.
func dueOf(schedule, workflow string) time.Time {
	at, _ := time.Parse(time.RFC3339, strings.TrimPrefix(workflow, schedule+"-"))
	return at
}

// NextFire is the next time a flow's schedule fires on Temporal, or the
// zero time.
func (s *Schedules) NextFire(ctx context.Context, flow string) time.Time {
	d, err := s.c.Client.ScheduleClient().GetHandle(ctx, s.prefix+flow).Describe(ctx)
	if err != nil || len(d.Info.NextActionTimes) == 0 {
		return time.Time{}
	}
	return d.Info.NextActionTimes[0]
}

// scheduleSpec maps a flow's schedule onto Temporal's (docs/temporal.md):
// `@every D` is an interval, other expressions cron strings in the
// schedule's zone; overlap skip, queue and allow are Temporal's skip,
// buffer one and allow all; catchup none keeps Temporal's shortest
// catch-up window, once a window of a year with at most one run buffered.
func scheduleSpec(s *flows.Schedule) (client.ScheduleSpec, client.SchedulePolicies) {
	var spec client.ScheduleSpec
	if d, ok := strings.CutPrefix(s.Cron, "@every "); ok {
		every, _ := time.ParseDuration(strings.TrimSpace(d))
		spec.Intervals = []client.ScheduleIntervalSpec{{Every: every}}
	} else {
		spec.CronExpressions = []string{s.Cron}
		spec.TimeZoneName = zoneName(s.Location)
	}
	var p client.SchedulePolicies
	switch s.Overlap {
	case flows.OverlapQueue:
		p.Overlap = enumspb.SCHEDULE_OVERLAP_POLICY_BUFFER_ONE
	case flows.OverlapAllow:
		p.Overlap = enumspb.SCHEDULE_OVERLAP_POLICY_ALLOW_ALL
	default:
		p.Overlap = enumspb.SCHEDULE_OVERLAP_POLICY_SKIP
	}
	p.CatchupWindow = 10 * time.Second // Temporal's least
	if s.Catchup == flows.CatchupOnce {
		p.CatchupWindow = 365 * 24 * time.Hour
		if p.Overlap == enumspb.SCHEDULE_OVERLAP_POLICY_ALLOW_ALL {
			p.Overlap = enumspb.SCHEDULE_OVERLAP_POLICY_BUFFER_ONE
		}
	}
	return spec, p
}

// zoneName is the IANA name of loc for Temporal. Go calls the machine's
// zone "Local": its name is read from TZ or /etc/localtime, else UTC.
func zoneName(loc *time.Location) string {
	if loc != time.Local {
		return loc.String()
	}
	if tz := strings.TrimPrefix(os.Getenv("TZ"), ":"); tz != "" {
		return tz
	}
	if target, err := os.Readlink("/etc/localtime"); err == nil {
		if _, name, ok := strings.Cut(target, "zoneinfo/"); ok {
			return name
		}
	}
	return "UTC"
}

func isNotFound(err error) bool {
	return err != nil && strings.Contains(strings.ToLower(err.Error()), "not found")
}

// ID is the id of flow's Temporal Schedule.
func (s *Schedules) ID(flow string) string { return s.prefix + flow }
