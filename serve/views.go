package serve

import (
	"strings"
	"time"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/rundir"
)

// FlowView is a flow file as GET /api/flows and the page show it.
type FlowView struct {
	Name        string        `json:"name"`
	File        string        `json:"file"`
	Description string        `json:"description,omitempty"`
	Input       string        `json:"input,omitempty"` // the declared input type; a field with a default is `name?`, its default beside it
	Schedule    *ScheduleView `json:"schedule,omitempty"`
	Last        *RunView      `json:"last,omitempty"` // the newest run of the flow
	Running     int           `json:"running"`
	Errors      []string      `json:"errors,omitempty"` // the file does not load: its faults
	Warnings    []string      `json:"warnings,omitempty"`
}

// ScheduleView is a flow's schedule with its next fire.
type ScheduleView struct {
	Cron    string    `json:"cron"`
	TZ      string    `json:"tz"`
	Overlap string    `json:"overlap"`
	Catchup string    `json:"catchup"`
	Next    time.Time `json:"next,omitzero"`
}

// RunView is a run as the API and the page show it.
type RunView struct {
	ID        string          `json:"id"`
	Flow      string          `json:"flow"`
	Status    string          `json:"status"` // queued, running, succeeded, failed, stopped, interrupted
	Trigger   string          `json:"trigger,omitempty"`
	Started   time.Time       `json:"started,omitzero"`
	Ended     time.Time       `json:"ended,omitzero"`
	WallMS    int64           `json:"wall_ms"`
	Usage     record.Usage    `json:"usage"`
	Error     *record.Failure `json:"error,omitempty"`
	Resumable bool            `json:"resumable"`
	Why       string          `json:"why,omitempty"` // why it is not resumable
	Dir       string          `json:"dir,omitempty"`
	// Overspend names each budget the run ended above, by how much and
	// why (its end fact's).
	Overspend []record.Overspend `json:"overspend,omitempty"`
	// ForkedFrom is where a fork came from (flow fork), and Forks the
	// forks made of this run (the run page only).
	ForkedFrom *record.Fork `json:"forked_from,omitempty"`
	Forks      []string     `json:"forks,omitempty"`
	Live       []LiveVisit  `json:"live,omitempty"`    // visits running now
	Asks       []*Ask       `json:"asks,omitempty"`    // questions it waits on
	Waiting    []WaitView   `json:"waiting,omitempty"` // the waits of a waiting run (docs/waits.md)
	Visits     []VisitView  `json:"visits,omitempty"`  // GET /api/runs/{id} only
}

// VisitView is one visit of a run, from its journal.
type VisitView struct {
	Visit   string          `json:"visit"`
	Node    string          `json:"node"`
	Kind    string          `json:"kind"`
	Status  string          `json:"status"` // running, ok, failed, skipped, interrupted
	Started time.Time       `json:"started"`
	WallMS  int64           `json:"wall_ms,omitempty"`
	Agent   string          `json:"agent,omitempty"`
	Model   string          `json:"model,omitempty"`
	Usage   *record.Usage   `json:"usage,omitempty"`
	Error   *record.Failure `json:"error,omitempty"`
	Output  any             `json:"output,omitempty"`
	Answer  *record.Answer  `json:"answer,omitempty"`
	// Parent is the visit that delegated this one; Depth is how deep in
	// its delegation tree it is, and TreeUsage what a visit that
	// delegated spent with its subtree (docs/delegation.md).
	Parent    string        `json:"parent,omitempty"`
	Depth     int           `json:"-"`
	TreeUsage *record.Usage `json:"tree_usage,omitempty"`
}

// runView makes the view of a run directory's summary, with what the
// server knows of it beside.
func (s *Server) runView(info *rundir.RunInfo) *RunView {
	v := &RunView{ID: info.ID, Flow: info.Flow, Status: string(info.Status), Trigger: s.trigger(info.ID), Started: info.Started,
		Ended: info.Ended, WallMS: info.WallMS, Usage: info.Usage, Error: info.Failure, Resumable: info.Resumable, Why: info.Why, Dir: info.Dir,
		Overspend: info.Overspend, ForkedFrom: info.ForkedFrom}
	if a, _ := s.runs.get(info.ID); a != nil {
		v.Status, v.Resumable, v.Why = string(record.StatusRunning), false, "it is running"
		v.Live = a.liveVisits()
	} else if s.waker.has(info.ID) {
		// A run on Temporal let go while it waits (docs/waits.md).
		v.Status = string(rundir.StatusWaiting)
	}
	v.Asks = s.asks.list(info.ID)
	// A run on Temporal waits while it runs: its workflow holds the wait
	// (docs/waits.md, On Temporal).
	if len(info.Waiting) > 0 && (info.Status != rundir.StatusWaiting || v.Status == string(rundir.StatusWaiting)) {
		v.Waiting = s.waitViews(info)
	}
	return v
}

// queuedView is a run waiting for a slot: it has no directory yet.
func (s *Server) queuedView(j *job) *RunView {
	return &RunView{ID: j.id, Flow: j.flow, Status: statusQueued, Trigger: j.trigger, Started: j.queued, Why: "it waits for a slot"}
}

// visitViews reads a run's visits from its journal facts.
func visitViews(facts []*record.Fact, stillRunning bool) []VisitView {
	vs := rundir.Visits(facts)
	trees := rundir.DelegationTotals(facts)
	out := make([]VisitView, 0, len(vs))
	for _, v := range vs {
		vv := VisitView{Visit: v.Start.Visit, Node: v.Start.Node, Kind: string(v.Start.Kind), Started: v.Start.Time,
			Parent: v.Start.Parent, Depth: strings.Count(v.Start.Visit, "/delegate:")}
		if u, ok := trees[vv.Visit]; ok {
			vv.TreeUsage = &u
		}
		switch e := v.End; {
		case e == nil && stillRunning:
			vv.Status = "running"
		case e == nil:
			vv.Status = "interrupted"
		default:
			vv.WallMS, vv.Agent, vv.Model, vv.Usage, vv.Error, vv.Output, vv.Answer = e.WallMS, e.Agent, e.Model, e.Usage, e.Error, e.Output, e.Answer
			switch {
			case e.Skipped:
				vv.Status = "skipped"
			case e.Succeeded():
				vv.Status = "ok"
			default:
				vv.Status = "failed"
			}
		}
		out = append(out, vv)
	}
	return out
}

// flowViews lists the flow files, each with its schedule and last run.
func (s *Server) flowViews(recent []*RunView) []*FlowView {
	active, _ := s.runs.snapshot()
	var out []*FlowView
	for _, e := range s.catalog.all() {
		fv := &FlowView{Name: e.Name, File: e.File}
		for _, d := range e.Diags {
			if e.Broken() {
				fv.Errors = append(fv.Errors, d.String())
			} else {
				fv.Warnings = append(fv.Warnings, d.String())
			}
		}
		if !e.Broken() {
			root := e.Plan.Root
			fv.Description, fv.Input = root.Doc.Description.Value, inputText(root.Input)
			if sc := root.Schedule; sc != nil {
				fv.Schedule = &ScheduleView{Cron: sc.Cron, TZ: sc.Location.String(), Overlap: sc.Overlap, Catchup: sc.Catchup, Next: s.nextFire(e.Plan.Root)}
			}
		}
		for _, a := range active {
			if a.flow == e.Name {
				fv.Running++
			}
		}
		for _, r := range recent {
			if r.Flow == e.Name && r.Status != statusQueued {
				fv.Last = r
				break
			}
		}
		out = append(out, fv)
	}
	return out
}

// listRuns returns the queued runs, then every run directory, newest first.
func (s *Server) listRuns() ([]*RunView, error) {
	infos, err := rundir.List(s.cfg.RunsDir)
	if err != nil {
		return nil, err
	}
	_, queue := s.runs.snapshot()
	out := make([]*RunView, 0, len(queue)+len(infos))
	for i := len(queue) - 1; i >= 0; i-- {
		out = append(out, s.queuedView(queue[i]))
	}
	for _, info := range infos {
		out = append(out, s.runView(info))
	}
	return out, nil
}
