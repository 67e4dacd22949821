package main

import (
	"encoding/json"
	"io"
	"time"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/schema"
)

// shownVisit is one visit in flow show --json: what the text rows say,
// whole (the output is not cut to a line).
type shownVisit struct {
	Visit   string          `json:"visit"`
	Node    string          `json:"node,omitempty"`
	Kind    schema.Kind     `json:"kind,omitempty"`
	Status  string          `json:"status"` // running, ok, skipped, failed
	Started time.Time       `json:"started"`
	WallMS  int64           `json:"wall_ms,omitempty"`
	Agent   string          `json:"agent,omitempty"`
	Model   string          `json:"model,omitempty"`
	Usage   *record.Usage   `json:"usage,omitempty"`
	Error   *record.Failure `json:"error,omitempty"`
	Output  any             `json:"output,omitempty"`
	File    string          `json:"file,omitempty"` // where a long output is, Output its start
	Answer  *record.Answer  `json:"answer,omitempty"`
}

// showJSON writes a run as flow show --json prints it: the run's summary
// (as flow runs --json has it) and every visit in the order they started.
func showJSON(w io.Writer, info *rundir.RunInfo) error {
	visits := []shownVisit{}
	for _, v := range rundir.Visits(info.Facts) {
		sv := shownVisit{Visit: v.Start.Visit, Node: v.Start.Node, Kind: v.Start.Kind, Status: "running", Started: v.Start.Time, Agent: v.Start.Agent}
		if e := v.End; e != nil {
			sv.WallMS, sv.Model, sv.Usage, sv.Error, sv.Output, sv.File, sv.Answer = e.WallMS, e.Model, e.Usage, e.Error, e.Output, e.File, e.Answer
			switch {
			case e.Succeeded() && e.Skipped:
				sv.Status = "skipped"
			case e.Succeeded():
				sv.Status = "ok"
			default:
				sv.Status = "failed"
			}
			if e.Agent != "" {
				sv.Agent = e.Agent
			}
		}
		visits = append(visits, sv)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		*rundir.RunInfo
		Cell   *sweepCell   `json:"sweep_cell,omitempty"` // when the run is a sweep's cell
		Visits []shownVisit `json:"visits"`
	}{info, cellOf(info.Dir), visits})
}
