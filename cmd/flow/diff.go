package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/rundir"
)

// diffCmd compares two runs visit by visit (docs/fork-and-diff.md).
func (a *app) diffCmd() *cobra.Command {
	var asJSON, all bool
	cmd := &cobra.Command{
		Use:   "diff RUN RUN",
		Short: "Compare two runs: visits added, removed and changed, usage and cost side by side",
		Long: "Compare two runs visit by visit: visits only in one of them, and visits whose status,\n" +
			"failure kind, model or output differ, with the first line at which their outputs\n" +
			"differ; then each visit's tokens and cost in both runs, and the totals. Differences\n" +
			"are not an error: flow diff exits 0 when it could compare, 2 when a run is not found.",
		Example: "  flow diff 20261201-093000-ab12cd 20261201-101500-ef34gh\n" +
			"  flow diff RUN FORK --json | jq '.visits[] | select(.change != \"same\")'",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var facts [2][]*record.Fact
			var ids [2]string
			for i, name := range args {
				dir, err := a.findRun([]string{name}, false)
				if err != nil {
					return err
				}
				if facts[i], err = rundir.ReadJournal(dir); err != nil {
					return invalid("reading run %s: %v", name, err)
				}
				ids[i] = runIDOf(dir, facts[i])
			}
			d := rundir.Diff(ids[0], facts[0], ids[1], facts[1])
			if asJSON {
				return diffJSON(a, d)
			}
			a.printDiff(d, all)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the comparison as JSON")
	cmd.Flags().BoolVar(&all, "all", false, "also list the visits that are the same in both runs")
	return cmd
}

// runIDOf is a run's id as its journal names it, else its directory's name.
func runIDOf(dir string, facts []*record.Fact) string {
	for _, f := range facts {
		if f.Type == record.FactRun && f.RunID != "" {
			return f.RunID
		}
	}
	return dirName(dir)
}

func dirName(dir string) string {
	dir = strings.TrimRight(dir, "/")
	return dir[strings.LastIndexByte(dir, '/')+1:]
}

// printDiff writes d for a reader: a line per visit that differs, its
// fields and first differing output line, then usage side by side.
func (a *app) printDiff(d *rundir.RunDiff, all bool) {
	w := a.stdout
	fmt.Fprintf(w, "--- %s\n+++ %s\n", d.A, d.B)
	for _, v := range d.Visits {
		switch v.Change {
		case rundir.Same:
			if all {
				fmt.Fprintf(w, "  %s  %s\n", safeLine(v.Visit), v.A.Status)
			}
			continue
		case rundir.Removed:
			fmt.Fprintf(w, "- %s  %s (only in %s)\n", safeLine(v.Visit), sideWord(v.A), d.A)
			continue
		case rundir.Added:
			fmt.Fprintf(w, "+ %s  %s (only in %s)\n", safeLine(v.Visit), sideWord(v.B), d.B)
			continue
		}
		fmt.Fprintf(w, "~ %s  %s\n", safeLine(v.Visit), strings.Join(v.Fields, ", "))
		for _, f := range v.Fields {
			switch f {
			case "status", "kind":
				if f == "kind" && v.A.Status != v.B.Status {
					continue // said with the status
				}
				fmt.Fprintf(w, "    status: %s → %s\n", sideWord(v.A), sideWord(v.B))
			case "model":
				fmt.Fprintf(w, "    model: %s → %s\n", orNone(v.A.Model), orNone(v.B.Model))
			case "output":
				fmt.Fprintf(w, "    output, first difference at line %d:\n      - %s\n      + %s\n", v.Line, safeLine(v.LineA), safeLine(v.LineB))
				fmt.Fprintf(w, "    output in %s:\n%s", d.A, excerpt(v.A.Output))
				fmt.Fprintf(w, "    output in %s:\n%s", d.B, excerpt(v.B.Output))
			}
		}
	}
	fmt.Fprintf(w, "%d visit(s) differ, %d the same\n\n", d.Differed, d.Same)
	fmt.Fprintf(w, "%-40s %14s %14s %10s %10s\n", "VISIT", "TOKENS "+shortID(d.A), "TOKENS "+shortID(d.B), "COST A", "COST B")
	for _, v := range d.Visits {
		if v.Change == rundir.Same && !all && !spent(v.A) && !spent(v.B) {
			continue
		}
		fmt.Fprintf(w, "%-40s %14s %14s %10s %10s\n", safeLine(v.Visit), usageCol(v.A, rundir.TokensText), usageCol(v.B, rundir.TokensText),
			usageCol(v.A, rundir.CostText), usageCol(v.B, rundir.CostText))
	}
	fmt.Fprintf(w, "%-40s %14s %14s %10s %10s\n", "total", rundir.TokensText(d.TotalA), rundir.TokensText(d.TotalB),
		rundir.CostText(d.TotalA), rundir.CostText(d.TotalB))
}

// excerptLines bounds how much of each changed output flow diff prints:
// the whole of either is in the runs (flow show --json).
const excerptLines = 8

// excerpt is an output's first lines, indented, for printDiff.
func excerpt(o any) string {
	lines := strings.Split(rundir.OutputText(o), "\n")
	var b strings.Builder
	for i, l := range lines {
		if i == excerptLines {
			fmt.Fprintf(&b, "      … %d more line(s)\n", len(lines)-i)
			break
		}
		fmt.Fprintf(&b, "      | %s\n", safeLine(l))
	}
	return b.String()
}

// sideWord is a visit's outcome in one run: its status, and its failure
// kind when it failed.
func sideWord(s *rundir.Side) string {
	w := s.Status
	if s.Kind != "" {
		w += " (" + s.Kind + ")"
	}
	if s.Reused {
		w += ", reused"
	}
	return w
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func shortID(id string) string {
	if len(id) > 6 {
		return id[len(id)-6:]
	}
	return id
}

func spent(s *rundir.Side) bool { return s != nil && s.Usage.Spent() }

// usageCol is one figure of a side's usage, "-" where the visit is absent.
func usageCol(s *rundir.Side, text func(record.Usage) string) string {
	if s == nil {
		return "-"
	}
	if s.Usage == nil {
		return text(record.Usage{})
	}
	return text(*s.Usage)
}

// diffJSON prints d as one JSON document.
func diffJSON(a *app, d *rundir.RunDiff) error {
	type totals struct {
		A record.Usage `json:"a"`
		B record.Usage `json:"b"`
	}
	doc := struct {
		A        string             `json:"a"`
		B        string             `json:"b"`
		Differed int                `json:"differed"`
		Same     int                `json:"same"`
		Visits   []rundir.VisitDiff `json:"visits"`
		Total    totals             `json:"total"`
	}{d.A, d.B, d.Differed, d.Same, d.Visits, totals{d.TotalA, d.TotalB}}
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
