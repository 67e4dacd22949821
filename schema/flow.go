package schema

import (
	"path/filepath"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// Flow is a flow file as written, every value with its position. It is the
// document; flows.Plan is its checked, compiled form.
type Flow struct {
	File          string // the path it was read from
	Source        []byte // the bytes as read, kept for the run snapshot
	Pos           Pos
	Name          String
	Description   String
	Input         *Type // nil: the input is a string
	Model         String
	Models        []ModelPin // `models:`, in file order
	ModelsPos     Pos
	Timeout       Duration
	Budget        *Budget
	Concurrency   Int
	AgentDirs     []String
	InlineAgents  []*AgentDoc
	ProjectAgents Bool
	Schedule      *Schedule
	Sweep         *Sweep
	Nodes         []*Node
	NodesPos      Pos
}

// Budget bounds what a flow or node may spend (docs/resume-and-budgets.md, Budgets).
type Budget struct {
	Pos    Pos
	Tokens Int
	Cost   Float
}

// Schedule runs a flow by cron under `flow serve` (docs/serve.md). The loader
// (package flows) checks the expression, the zone and the input.
type Schedule struct {
	Pos      Pos
	Cron     String // five fields, a descriptor (@hourly) or @every <duration>
	TZ       String // an IANA zone; empty: the server's local time
	Input    any
	HasInput bool
	InputPos Pos
	Overlap  String // skip (default) | queue | allow
	Catchup  String // none (default) | once
}

// ParseFlow decodes a flow file within the default Limits. It returns the
// document as far as it could be read and every problem found; a document
// with errors must not run.
func ParseFlow(file string, src []byte) (*Flow, Diagnostics) { return Limits{}.ParseFlow(file, src) }

// ParseFlow decodes a flow file within l.
func (l Limits) ParseFlow(file string, src []byte) (*Flow, Diagnostics) {
	var diags Diagnostics
	r := &reader{file: file, diags: &diags, src: stripBOM(src)}
	f := &Flow{File: file, Source: src, Pos: Pos{File: file, Line: 1, Col: 1}}
	body := r.parse(l)
	if body == nil {
		return f, diags
	}
	es, ok := r.mapping(body, "a flow file", flowKeys)
	if !ok {
		return f, diags
	}
	hasNodes := false
	for _, e := range es {
		switch e.key {
		case "name":
			f.Name = r.str(e.value, "name")
		case "description":
			f.Description = r.str(e.value, "description")
		case "input":
			f.Input = r.typeExpr(e.value, "input")
		case "model":
			f.Model = r.str(e.value, "model")
		case "models":
			f.ModelsPos = r.pos(e.keyN)
			f.Models = r.models(e.value)
		case "timeout":
			f.Timeout = r.duration(e.value, "timeout")
		case "budget":
			f.Budget = r.budget(e.value)
		case "concurrency":
			f.Concurrency = r.integer(e.value, "concurrency", 1)
		case "agents":
			items, _ := r.list(e.value, "agents")
			for _, it := range items {
				if isScalar(it) {
					f.AgentDirs = append(f.AgentDirs, r.str(it, "agents item"))
				} else {
					f.InlineAgents = append(f.InlineAgents, r.inlineAgent(it))
				}
			}
		case "project_agents":
			f.ProjectAgents = r.boolean(e.value, "project_agents")
		case "schedule":
			f.Schedule = r.schedule(e.value)
		case "sweep":
			f.Sweep = r.sweep(e.value)
		case "nodes":
			hasNodes = true
			f.NodesPos = r.pos(e.keyN)
			f.Nodes = r.sequence(e.value, "nodes")
		}
	}
	if !f.Name.Set() {
		diags.Add(f.Pos, CodeMissing, "add `name: "+Stem(file)+"` (the file's stem)", "the flow has no name")
	} else if stem := Stem(file); stem != "" && f.Name.Value != stem {
		diags.Add(f.Name.Pos, CodeName, "rename the flow to \""+stem+"\" or the file to \""+f.Name.Value+".yaml\"", "the flow's name %q must equal the file's stem %q", f.Name.Value, stem)
	}
	if !hasNodes {
		diags.Add(f.Pos, CodeMissing, "add `nodes:` with at least one node", "the flow has no nodes")
	}
	return f, diags
}

// Stem is a file's name without directory and extension: a flow's name.
func Stem(file string) string {
	base := filepath.Base(file)
	return strings.TrimSuffix(strings.TrimSuffix(base, filepath.Ext(base)), ".flow")
}

func (r *reader) budget(n ast.Node) *Budget {
	es, ok := r.mapping(n, "budget", budgetKeys)
	if !ok {
		return nil
	}
	b := &Budget{Pos: r.pos(n)}
	for _, e := range es {
		switch e.key {
		case "tokens":
			b.Tokens = r.integer(e.value, "budget.tokens", 0)
		case "cost":
			b.Cost = r.number(e.value, "budget.cost")
		}
	}
	if !b.Tokens.IsSet && !b.Cost.IsSet {
		r.errorf(n, CodeMissing, "give tokens:, cost: or both", "the budget bounds nothing")
	}
	return b
}

func (r *reader) schedule(n ast.Node) *Schedule {
	es, ok := r.mapping(n, "schedule", scheduleKeys)
	if !ok {
		return nil
	}
	s := &Schedule{Pos: r.pos(n)}
	for _, e := range es {
		switch e.key {
		case "cron":
			s.Cron = r.str(e.value, "schedule.cron")
		case "tz":
			s.TZ = r.str(e.value, "schedule.tz")
		case "input":
			s.Input, s.HasInput, s.InputPos = r.plainValue(e.value), true, r.pos(e.value)
		case "overlap":
			s.Overlap = r.str(e.value, "schedule.overlap")
			if !contains([]string{"skip", "queue", "allow"}, s.Overlap.Value) {
				r.errorf(e.value, CodeValue, "use skip (the default), queue or allow", "schedule.overlap is %q", s.Overlap.Value)
			}
		case "catchup":
			s.Catchup = r.str(e.value, "schedule.catchup")
			if !contains([]string{"none", "once"}, s.Catchup.Value) {
				r.errorf(e.value, CodeValue, "use none (the default) or once", "schedule.catchup is %q", s.Catchup.Value)
			}
		}
	}
	if !s.Cron.Set() {
		r.errorf(n, CodeMissing, `add cron: "0 3 * * *" or cron: "@every 10m"`, "the schedule has no cron")
	}
	return s
}
