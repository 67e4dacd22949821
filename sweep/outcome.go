package sweep

import (
	"slices"
	"strings"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/schema"
)

// Outcome is what a cell's run came to, read from its run directory when
// it ended (or stopped): enough for every report without reading the run
// again.
type Outcome struct {
	Status  record.Status `json:"status"`
	Success bool          `json:"success"`
	// Score is 1 or 0 for a boolean score or none, else the number the
	// score gave; a failed run scores 0.
	Score float64 `json:"score"`
	// Failure is the kind of the run's first failure, or "score" when the
	// run succeeded and its score said no or could not be evaluated.
	Failure string       `json:"failure,omitempty"`
	Message string       `json:"message,omitempty"`
	Usage   record.Usage `json:"usage"`
	// Attempts counts agent visits' tries, retries included. (A turn, as
	// in usage.json, is the model's: Usage.Turns, as drivers report it.)
	Attempts int   `json:"attempts"`
	WallMS   int64 `json:"wall_ms"`
	// EmptyAnswers counts agent turns that ended with no answer.
	EmptyAnswers int       `json:"empty_answers,omitempty"`
	Nodes        []NodeUse `json:"nodes,omitempty"`
	// Overspend is what the cell's run says of its own budgets it ended
	// above (its end fact's).
	Overspend []record.Overspend `json:"overspend,omitempty"`
}

// FailScore is the failure kind of a run that succeeded but did not pass
// its sweep's score.
const FailScore = "score"

// NodeUse is what the visits of one node, with one agent on one model,
// came to in a run.
type NodeUse struct {
	Node     string       `json:"node"`
	Kind     schema.Kind  `json:"kind"`
	Agent    string       `json:"agent,omitempty"`
	Model    string       `json:"model,omitempty"`
	Visits   int          `json:"visits"`
	Failures int          `json:"failures"`
	Usage    record.Usage `json:"usage"`
}

// readOutcome reads the outcome of the run in dir; score is the sweep's
// score, or nil for the run's own success.
func readOutcome(dir string, score *flows.Score) (*Outcome, *rundir.RunInfo, error) {
	info, err := rundir.Inspect(dir)
	if err != nil {
		return nil, nil, err
	}
	o := &Outcome{Status: info.Status, Usage: info.Usage, WallMS: info.WallMS, Overspend: info.Overspend}
	o.Nodes, o.Attempts, o.EmptyAnswers = nodeUses(info.Facts)
	switch info.Status {
	case record.StatusSucceeded:
		o.Success, o.Score = true, 1
		if score != nil {
			scoreRun(o, dir, score)
		}
	case record.StatusFailed:
		if info.Failure != nil {
			root := info.Failure.Root()
			o.Failure, o.Message = string(root.Kind), root.Message
		}
	}
	return o, info, nil
}

func scoreRun(o *Outcome, dir string, score *flows.Score) {
	values, err := rundir.ReadValues(dir)
	var v float64
	var numeric bool
	if err == nil {
		v, numeric, err = score.Eval(values)
	}
	switch {
	case err != nil:
		o.Success, o.Score, o.Failure, o.Message = false, 0, FailScore, err.Error()
	case numeric:
		o.Score = v
	case v == 0:
		o.Success, o.Score, o.Failure, o.Message = false, 0, FailScore, "the score "+score.Source+" was false"
	}
}

// nodeUses totals the leaf visits of a run per node, agent and model, in
// the order the nodes first ended; it also counts agent attempts and empty
// answers.
func nodeUses(facts []*record.Fact) (uses []NodeUse, attempts, empty int) {
	at := map[[3]string]int{}
	for _, f := range facts {
		if f.Type != record.FactEnd || (f.Kind != schema.KindAgent && f.Kind != schema.KindRun && f.Kind != schema.KindAsk && f.Kind != schema.KindWait) {
			continue
		}
		key := [3]string{f.Node, f.Agent, f.Model}
		i, ok := at[key]
		if !ok {
			i = len(uses)
			at[key] = i
			uses = append(uses, NodeUse{Node: f.Node, Kind: f.Kind, Agent: f.Agent, Model: f.Model})
		}
		u := &uses[i]
		u.Visits++
		if !f.Succeeded() {
			u.Failures++
		}
		if f.Usage != nil {
			u.Usage.Add(*f.Usage)
		}
		if f.Kind == schema.KindAgent {
			attempts += f.Attempts
			if f.Error != nil && strings.Contains(f.Error.Message, "no answer") {
				empty++
			}
		}
	}
	return slices.Clip(uses), attempts, empty
}
