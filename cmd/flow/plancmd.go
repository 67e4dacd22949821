package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/schema"
)

func (a *app) planCmd() *cobra.Command {
	var mermaid bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "plan FILE",
		Short: "Show a flow's shape with the worst-case turns and time per node",
		Long: "Show the flow as a tree. For each node: the most agent turns it can take\n" +
			"and the longest it can run, counting retries, typed-output send-backs,\n" +
			"loop and map bounds and each turn's timeout. Nothing runs.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			shortLived()
			plan, err := a.load(args[0])
			if err != nil {
				return err
			}
			e := &estimator{plan: plan, timeout: timeout}
			if mermaid {
				writeMermaid(a.stdout, plan)
				return nil
			}
			total := e.sequence(plan.Root, plan.Root.Nodes)
			fmt.Fprintf(a.stdout, "%s  (worst case: %d turns, %s)\n", plan.Root.Name, total.turns, total.time)
			e.print(a.stdout, plan.Root, plan.Root.Nodes, "  ")
			return nil
		},
	}
	cmd.Flags().BoolVar(&mermaid, "mermaid", false, "print a Mermaid flowchart instead")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "assume this --timeout for every agent turn")
	return cmd
}

// worst is the most a node can cost: agent turns and wall time.
type worst struct {
	turns int
	time  time.Duration
}

type estimator struct {
	plan    *flows.Plan
	timeout time.Duration
	calls   []string // flow call stack (cycles are refused at load time)
}

func (e *estimator) turnTimeout(f *flows.Flow, n *flows.Node) time.Duration {
	switch {
	case e.timeout > 0:
		return e.timeout
	case n.Timeout > 0:
		return n.Timeout
	case f.Timeout > 0:
		return f.Timeout
	}
	return 30 * time.Minute
}

func (e *estimator) sequence(f *flows.Flow, nodes []*flows.Node) worst {
	var w worst
	for _, n := range nodes {
		nw := e.node(f, n)
		w.turns += nw.turns
		w.time += nw.time
	}
	return w
}

func (e *estimator) node(f *flows.Flow, n *flows.Node) worst {
	switch n.Kind {
	case schema.KindAgent:
		per := 1
		if n.Typed {
			per = 2
		}
		turns := per * (n.Retry + 1)
		return worst{turns: turns, time: time.Duration(turns) * e.turnTimeout(f, n)}
	case schema.KindRun:
		if n.Timeout > 0 {
			return worst{time: n.Timeout}
		}
		return worst{time: 10 * time.Minute}
	case schema.KindChoice:
		var w worst
		for _, b := range n.Branches {
			bw := e.sequence(f, b.Nodes)
			w.turns, w.time = max(w.turns, bw.turns), max(w.time, bw.time)
		}
		return w
	case schema.KindParallel:
		var w worst
		for _, b := range n.Branches {
			bw := e.sequence(f, b.Nodes)
			w.turns += bw.turns
			w.time = max(w.time, bw.time)
		}
		return w
	case schema.KindMap:
		bw := e.sequence(f, n.Body)
		waves := (n.Max + n.Concurrency - 1) / n.Concurrency
		return worst{turns: bw.turns * n.Max, time: bw.time * time.Duration(waves)}
	case schema.KindLoop:
		bw := e.sequence(f, n.Body)
		return worst{turns: bw.turns * n.Max, time: bw.time * time.Duration(n.Max)}
	case schema.KindFlow:
		callee := e.plan.Flows[n.Callee]
		if callee == nil {
			return worst{}
		}
		return e.sequence(callee, callee.Nodes)
	}
	return worst{}
}

func (e *estimator) print(w io.Writer, f *flows.Flow, nodes []*flows.Node, indent string) {
	for _, n := range nodes {
		nw := e.node(f, n)
		fmt.Fprintf(w, "%s%s  %s%s  (%d turns, %s)\n", indent, n.ID, describeNode(n), "", nw.turns, nw.time)
		switch n.Kind {
		case schema.KindChoice:
			for _, b := range n.Branches {
				label := "else"
				if !b.Else {
					label = "when " + b.When.Source
				}
				fmt.Fprintf(w, "%s  %s:\n", indent, label)
				e.print(w, f, b.Nodes, indent+"    ")
			}
		case schema.KindParallel:
			for _, b := range n.Branches {
				fmt.Fprintf(w, "%s  %s:\n", indent, b.Name)
				e.print(w, f, b.Nodes, indent+"    ")
			}
		case schema.KindMap, schema.KindLoop:
			e.print(w, f, n.Body, indent+"  ")
		case schema.KindFlow:
			if callee := e.plan.Flows[n.Callee]; callee != nil {
				e.print(w, callee, callee.Nodes, indent+"  ")
			}
		}
	}
}

func describeNode(n *flows.Node) string {
	switch n.Kind {
	case schema.KindAgent:
		s := "agent " + n.Agent.Name + " (" + n.Agent.Driver + ")"
		if n.Memory != "" {
			s += " memory:" + n.Memory
		}
		if n.Typed {
			s += " -> " + n.Output.String()
		}
		return s
	case schema.KindRun:
		if n.Script != nil {
			return "run " + quoteShort(n.Script.Source)
		}
		parts := make([]string, len(n.Argv))
		for i, a := range n.Argv {
			parts[i] = a.Source
		}
		return "run [" + strings.Join(parts, " ") + "]"
	case schema.KindMap:
		return fmt.Sprintf("map %s (max %d, concurrency %d)", n.Items.Source, n.Max, n.Concurrency)
	case schema.KindLoop:
		return fmt.Sprintf("loop until %s (max %d)", n.Until.Source, n.Max)
	case schema.KindFlow:
		return "flow " + n.Callee
	case schema.KindAsk:
		return "ask " + quoteShort(n.Question)
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
		case schema.KindAgent, schema.KindRun, schema.KindAsk, schema.KindFlow:
			fmt.Fprintf(m.w, "%s%s[\"%s: %s\"]\n", indent, id, n.ID, strings.ReplaceAll(describeNode(n), `"`, "'"))
		default:
			fmt.Fprintf(m.w, "%ssubgraph %s [\"%s: %s\"]\n", indent, id, n.ID, strings.ReplaceAll(describeNode(n), `"`, "'"))
			for _, b := range n.Branches {
				m.sequence(b.Nodes, id+"_", indent+"  ")
			}
			m.sequence(n.Body, id+"_", indent+"  ")
			fmt.Fprintf(m.w, "%send\n", indent)
		}
		if prev != "" {
			fmt.Fprintf(m.w, "%s%s --> %s\n", indent, prev, id)
		}
		prev = id
	}
}
