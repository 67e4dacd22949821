package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/schema"
	"github.com/flowrun/flow/sweep"
)

func (a *app) planCmd() *cobra.Command {
	var mermaid, asJSON bool
	var model, reuseSpec string
	var timeout time.Duration
	var in runFlags
	cmd := &cobra.Command{
		Use:   "plan FILE",
		Short: "Show a flow's shape with the worst-case turns and time per node",
		Long: "Show the flow as a tree. For each node: the most agent turns it can take\n" +
			"and the longest it can run, counting retries, typed-output send-backs,\n" +
			"loop and map bounds and each turn's timeout; for each agent node, the\n" +
			"model and timeout its turns resolve to, as `flow run` resolves them.\n" +
			"Nothing runs.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			plan, err := a.load(args[0])
			if err != nil {
				return err
			}
			if reuseSpec != "" {
				in.model, in.timeout = model, timeout
				fl := cmd.Flags()
				return a.planReuse(cmd.Context(), plan, reuseSpec, in, fl.Changed("input") || fl.Changed("input-file") || fl.Changed("set"), asJSON)
			}
			if mermaid {
				writeMermaid(a.stdout, plan)
				return nil
			}
			est := flows.Estimate(plan, a.runSettings(model, timeout))
			history, err := a.history(plan.Root.Name)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(planJSON(est, history))
			}
			fmt.Fprintf(a.stdout, "%s  (worst case: %d turns, %s)\n", plan.Root.Name, est.Turns, est.Time)
			printEstimate(a.stdout, est, "  ", childrenLine(history))
			if sw := plan.Root.Sweep; sw != nil {
				fmt.Fprintf(a.stdout, "sweep: %s (flow sweep %s runs it; --dry-run forecasts it)\n", sweepText(sw), args[0])
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&mermaid, "mermaid", false, "print a Mermaid flowchart instead")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the estimate as JSON")
	cmd.Flags().StringVar(&model, "model", "", "assume this --model for every agent")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "assume this --timeout for every agent turn")
	cmd.Flags().StringVar(&reuseSpec, "reuse", "", "say which visits flow run --reuse would reuse (last, or RUN[,RUN]) and why the others would run")
	cmd.Flags().Lookup("reuse").NoOptDefVal = "last"
	cmd.Flags().StringVar(&in.input, "input", "", "with --reuse: the input as JSON (default the reused run's)")
	cmd.Flags().StringVar(&in.inputFile, "input-file", "", "with --reuse: read the input (JSON) from a file")
	cmd.Flags().StringArrayVarP(&in.inputKV, "set", "i", nil, "with --reuse: one input field, key=value (repeatable)")
	return cmd
}

// sweepText describes a flow's sweep: section in one line.
func sweepText(sw *flows.Sweep) string {
	var parts []string
	if len(sw.Models) > 0 {
		parts = append(parts, "models "+strings.Join(sw.Models, ", "))
	}
	for _, as := range sw.Assign {
		parts = append(parts, as.Agent+" on "+strings.Join(as.Models, ", "))
	}
	switch {
	case sw.Inputs != "":
		parts = append(parts, "tasks from "+filepath.Base(sw.Inputs))
	case sw.HasTasks:
		parts = append(parts, fmt.Sprintf("%d task(s)", len(sw.Tasks)))
	}
	for _, p := range sw.Params {
		parts = append(parts, fmt.Sprintf("%s over %d value(s)", p.Key, len(p.Values)))
	}
	if sw.Repeat > 1 {
		parts = append(parts, fmt.Sprintf("repeat %d", sw.Repeat))
	}
	if sw.Score != nil {
		parts = append(parts, "score "+sw.Score.Source)
	}
	if len(parts) == 0 {
		return "declared, with nothing to vary"
	}
	return strings.Join(parts, "; ")
}

// plannedNode is one node of `flow plan --json`.
type plannedNode struct {
	ID       string          `json:"id"`
	Kind     schema.Kind     `json:"kind"`
	Turns    int             `json:"turns"`
	Time     string          `json:"time"`
	Model    string          `json:"model,omitempty"`
	Timeout  string          `json:"timeout,omitempty"`
	Branches []plannedBranch `json:"branches,omitempty"`
	Body     []plannedNode   `json:"body,omitempty"`
	// Delegates is what a delegating node's children are expected to
	// take, as the text's "children from N earlier run(s)" line says.
	Delegates *plannedDelegation `json:"delegates,omitempty"`
}

// plannedDelegation is a delegating node's children in `flow plan
// --json`: the agents it may start, and per agent the forecast from the
// flow's earlier runs (none when there is no earlier run).
type plannedDelegation struct {
	Agents   []string              `json:"agents"`
	Runs     int                   `json:"earlier_runs"`
	Children []sweep.ChildForecast `json:"children"`
}

type plannedBranch struct {
	Label string        `json:"label"`
	Nodes []plannedNode `json:"nodes"`
}

func planJSON(seq *flows.SequenceEstimate, h *sweep.History) []plannedNode {
	out := make([]plannedNode, 0, len(seq.Nodes))
	for _, e := range seq.Nodes {
		p := plannedNode{ID: e.Node.ID, Kind: e.Node.Kind, Turns: e.Turns, Time: e.Time.String(), Model: e.Model}
		if e.Timeout > 0 {
			p.Timeout = e.Timeout.String()
		}
		if an := e.Node.AsAgent(); an != nil && an.Delegate != nil {
			p.Delegates = &plannedDelegation{Agents: an.Delegate.Agents, Runs: h.Runs(), Children: h.Children(e)}
			if p.Delegates.Children == nil {
				p.Delegates.Children = []sweep.ChildForecast{}
			}
		}
		for _, b := range e.Branches {
			p.Branches = append(p.Branches, plannedBranch{Label: b.Label, Nodes: planJSON(b.SequenceEstimate, h)})
		}
		if e.Body != nil {
			p.Body = planJSON(e.Body, h)
		}
		out = append(out, p)
	}
	return out
}

func printEstimate(w io.Writer, seq *flows.SequenceEstimate, indent string, children func(*flows.NodeEstimate) string) {
	for _, e := range seq.Nodes {
		n := e.Node
		resolved := ""
		if n.Kind == schema.KindAgent {
			model := e.Model
			if model == "" {
				model = "driver default"
			}
			resolved = fmt.Sprintf(" [%s, timeout %s]", model, e.Timeout)
		}
		fmt.Fprintf(w, "%s%s  %s%s  (%d turns, %s)\n", indent, n.ID, describeNode(n), resolved, e.Turns, e.Time)
		if an := n.AsAgent(); an != nil && an.Delegate != nil {
			d := an.Delegate
			fmt.Fprintf(w, "%s  delegates to %s: %s (children's turns not counted above)\n", indent, strings.Join(d.Agents, ", "), delegateLimits(d))
			fmt.Fprintf(w, "%s  %s\n", indent, children(e))
		}
		for _, b := range e.Branches {
			fmt.Fprintf(w, "%s  %s:\n", indent, b.Label)
			printEstimate(w, b.SequenceEstimate, indent+"    ", children)
		}
		if e.Body != nil {
			printEstimate(w, e.Body, indent+"  ", children)
		}
	}
}

func describeNode(n *flows.Node) string {
	switch ns := n.Spec.(type) {
	case *flows.AgentNode:
		s := "agent " + ns.Agent.Name + " (" + ns.Agent.Driver + ")"
		if ns.Memory != "" {
			s += " memory:" + ns.Memory
		}
		if ns.Typed {
			s += " -> " + n.Output.String()
		}
		return s
	case *flows.RunNode:
		if ns.Script != nil {
			return "run " + quoteShort(ns.Script.Source)
		}
		parts := make([]string, len(ns.Argv))
		for i, a := range ns.Argv {
			parts[i] = a.Source
		}
		return "run [" + strings.Join(parts, " ") + "]"
	case *flows.MapNode:
		return fmt.Sprintf("map %s (max %d, concurrency %d)", ns.Items.Source, ns.Max, ns.Concurrency)
	case *flows.LoopNode:
		return fmt.Sprintf("loop until %s (max %d)", ns.Until.Source, ns.Max)
	case *flows.CallNode:
		return "flow " + ns.Callee
	case *flows.AskNode:
		return "ask " + quoteShort(ns.Question)
	case *flows.WaitNode:
		return describeWait(ns)
	}
	return string(n.Kind)
}

func quoteShort(s string) string {
	s = firstLine(s)
	if len(s) > 50 {
		s = s[:47] + "..."
	}
	return fmt.Sprintf("%q", s)
}

// writeMermaid prints the flow as a Mermaid flowchart: sequences as edges,
// blocks as subgraphs.
func writeMermaid(w io.Writer, p *flows.Plan) {
	fmt.Fprintln(w, "flowchart TD")
	m := &mermaidWriter{w: w}
	m.sequence(p.Root.Nodes, "", "  ")
}

type mermaidWriter struct {
	w io.Writer
}

func mermaidID(prefix, id string) string {
	return strings.NewReplacer("/", "_", "#", "_", "[", "_", "]", "_").Replace(prefix + id)
}

func (m *mermaidWriter) sequence(nodes []*flows.Node, prefix, indent string) {
	prev := ""
	for _, n := range nodes {
		id := mermaidID(prefix, n.ID)
		switch n.Kind {
		case schema.KindAgent, schema.KindRun, schema.KindAsk, schema.KindWait, schema.KindFlow:
			fmt.Fprintf(m.w, "%s%s[\"%s: %s\"]\n", indent, id, n.ID, strings.ReplaceAll(describeNode(n), `"`, "'"))
		default:
			fmt.Fprintf(m.w, "%ssubgraph %s [\"%s: %s\"]\n", indent, id, n.ID, strings.ReplaceAll(describeNode(n), `"`, "'"))
			for _, b := range n.Branches() {
				m.sequence(b.Nodes, id+"_", indent+"  ")
			}
			m.sequence(n.Body(), id+"_", indent+"  ")
			fmt.Fprintf(m.w, "%send\n", indent)
		}
		if prev != "" {
			fmt.Fprintf(m.w, "%s%s --> %s\n", indent, prev, id)
		}
		prev = id
	}
}

// delegateLimits says a delegation's limits as `flow plan` shows them.
func delegateLimits(d *flows.Delegate) string {
	s := fmt.Sprintf("max_depth %d, max_children %d, concurrency %d", d.MaxDepth, d.MaxChildren, d.Concurrency)
	if b := d.Budget; b != nil {
		if b.Tokens > 0 {
			s += fmt.Sprintf(", budget %d tokens", b.Tokens)
		}
		if b.Cost > 0 {
			s += fmt.Sprintf(", budget $%.2f", b.Cost)
		}
	}
	return s
}
