package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/schema"
)

func (a *app) runsCmd() *cobra.Command {
	var asJSON bool
	var forksOf string
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List the runs of this directory, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			runs, err := rundir.Summaries(a.cfg.GetString("runs_dir"))
			if err != nil {
				return err
			}
			if forksOf != "" {
				if runs, err = a.forksOf(forksOf, runs); err != nil {
					return err
				}
			}
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				if runs == nil {
					runs = []*rundir.RunInfo{}
				}
				return enc.Encode(runs)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RUN\tFLOW\tSTATUS\tSTARTED\tWALL\tTOKENS\tCOST")
			for _, r := range runs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", safeLine(r.ID), safeLine(r.Flow), r.Status, r.Started.Local().Format("2006-01-02 15:04:05"),
					fmtMS(r.WallMS), rundir.TokensText(r.Usage), rundir.CostText(r.Usage))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			for _, r := range runs {
				for _, w := range r.Waiting {
					fmt.Fprintf(a.stdout, "%s waiting at %s: %s\n", safeLine(r.ID), w.Visit, waitText(w.Wait))
				}
			}
			for _, r := range runs {
				if r.Status == record.StatusCorrupt {
					fmt.Fprintf(a.stderr, "run %s is corrupt: %s\n", safeLine(r.ID), safeLine(r.Why))
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the runs as JSON")
	cmd.Flags().StringVar(&forksOf, "forks-of", "", "list only the forks of this run (flow fork)")
	return cmd
}

func (a *app) showCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show [RUN]",
		Short: "Show a run's visits: status, failure, model, usage and the start of each output",
		Example: "  flow show                          # the latest run\n" +
			"  flow show 20261201-093000-ab12cd --json | jq '.visits[] | select(.status == \"failed\")'\n" +
			"  flow show .flow/sweeps/<sweep>/cells/<cell>",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := a.findRun(args, false)
			if err != nil {
				return err
			}
			info, err := rundir.Inspect(dir)
			if err != nil {
				return err
			}
			// An engine that died left its report as of its last refresh:
			// bring it up to date with the journal.
			if info.Status == record.StatusInterrupted {
				if err := rundir.WriteReport(dir); err != nil {
					fmt.Fprintf(a.stderr, "warning: bringing the run's report up to date: %v\n", err)
				}
			}
			if asJSON {
				return showJSON(a.stdout, info)
			}
			fmt.Fprintf(a.stdout, "run %s  flow %s  %s  %s  tokens %s  cost %s\n", info.ID, safeLine(info.Flow), info.Status,
				fmtMS(info.WallMS), rundir.TokensText(info.Usage), rundir.CostText(info.Usage))
			if line := cellLine(cellOf(dir)); line != "" {
				fmt.Fprintln(a.stdout, safeLine(line))
			}
			a.lineage(info)
			for _, w := range info.Waiting {
				fmt.Fprintf(a.stdout, "waiting at %s: %s\n", w.Visit, waitText(w.Wait))
			}
			if info.Failure != nil && info.Status != rundir.StatusWaiting {
				root := info.Failure.Root()
				fmt.Fprintf(a.stdout, "failed at %s: %s: %s\n", root.Visit, root.Kind, safeLine(firstLine(root.Message)))
			}
			for _, o := range info.Overspend {
				fmt.Fprintf(a.stdout, "overspent: %s\n", safeLine(o.String()))
			}
			if info.InfraInTree {
				fmt.Fprintln(a.stdout, infraLine)
			}
			for _, t := range temporalTroubles(dir) {
				fmt.Fprintln(a.stdout, safeLine(t))
			}
			if !info.Resumable && info.Status != record.StatusSucceeded {
				fmt.Fprintf(a.stdout, "not resumable: %s\n", safeLine(info.Why))
			}
			for _, v := range visitRows(info.Facts) {
				fmt.Fprintln(a.stdout, v)
			}
			for _, w := range info.Worktrees {
				why := "its scope did not end well"
				if w.Land == record.LandConflict {
					why = "its changes conflict with flow/" + info.ID
				}
				fmt.Fprintf(a.stdout, "kept worktree %s  %s  branch %s  (%s; flow gc removes it)\n", w.Scope, w.Path, w.Branch, why)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the run and every visit, whole, as JSON")
	return cmd
}

// visitRows renders the visits under their parents (rundir.Tree), each
// indented by its depth, siblings in the order they started.
func visitRows(facts []*record.Fact) []string {
	visits := rundir.Tree(rundir.Visits(facts))
	trees := rundir.DelegationTotals(facts)
	rows := make([]string, 0, len(visits))
	for _, visit := range visits {
		v := visit.Start.Visit
		mark, detail := "…", "running or interrupted"
		if e := visit.End; e != nil {
			switch {
			case e.Succeeded() && e.Skipped:
				mark, detail = "-", "skipped"
			case e.Succeeded():
				mark, detail = "✓", outputStart(e.Output)
			case e.Error != nil && e.Error.Kind == schema.FailWaiting:
				mark, detail = "⏸", firstLine(e.Error.Message)
			default:
				mark, detail = "✗", fmt.Sprintf("%s: %s", e.Error.Kind, firstLine(e.Error.Message))
			}
			if e.Model != "" || e.Timeout != "" {
				detail = "[" + strings.TrimSpace(e.Model+" "+timeoutText(e.Timeout)) + "] " + detail
			}
			if e.Reused != nil {
				mark, detail = "↺", "reused from "+e.Reused.Run+" "+e.Reused.Visit+": "+detail
			}
			detail += treeUsageText(e.Usage, trees, v)
			if sent := rundir.SentText(e); sent != "" {
				detail += "  [" + sent + "]"
			}
			detail = fmtMS(e.WallMS) + "  " + detail
		}
		rows = append(rows, fmt.Sprintf("%s%s %s  %s", strings.Repeat("  ", visit.Depth), mark, safeLine(v), safeLine(detail)))
	}
	return rows
}

// infraLine is what flow show and flow run say of a run whose delegated
// child failed on the infrastructure.
const infraLine = "infra_in_tree: a delegated child failed on the infrastructure (rate_limit, unavailable or killed); its parent's answer was not kept"

// treeUsageText is a visit's usage as flow show gives it: its own tokens,
// and what it spent with its delegates when it delegated — also when it
// reported no usage of its own (an exec parent).
func treeUsageText(u *record.Usage, trees map[string]record.Usage, visit string) string {
	tree, delegated := trees[visit]
	if u == nil || u.Tokens() <= 0 {
		if delegated && tree.Tokens() > 0 {
			return fmt.Sprintf("  (%d tokens with its delegates)", tree.Tokens())
		}
		return ""
	}
	partial, with := "", ""
	if u.Partial {
		partial = ", partial"
	}
	if delegated {
		with = fmt.Sprintf("; %d with its delegates", tree.Tokens())
	}
	return fmt.Sprintf("  (%d tokens%s%s)", u.Tokens(), partial, with)
}

func outputStart(v any) string {
	s := outputText(v)
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 72 {
		s = s[:69] + "..."
	}
	return s
}

// tailLimit bounds what flow tail reads of a transcript (README.md, Commands).
const tailLimit = 256 << 10

func (a *app) tailCmd() *cobra.Command {
	var lines int
	var follow bool
	var cursor string
	var raw bool
	cmd := &cobra.Command{
		Use:   "tail RUN [VISIT]",
		Short: "Print the newest lines of a visit's transcript (the latest visit without VISIT)",
		Long: "Print the newest lines of a running or ended visit's transcript, newest last,\n" +
			"reading at most 256 KiB. There is no cursor: a transcript is revised in place\n" +
			"while it runs, so no line number stays valid; poll (or --follow) and compare.\n" +
			"On a terminal, control characters an agent printed (colours, titles, clipboard\n" +
			"writes) are shown escaped; into a pipe the transcript's bytes go as they are.\n" +
			"On a terminal a turn's prompt and answer are shown as text, a typed answer as\n" +
			"indented JSON (--raw: the JSON lines as written, as into a pipe; --raw=false\n" +
			"renders them into a pipe too). A run node without a log shows its captured\n" +
			"output and exit status.",
		Example: "  flow tail 20261201-093000-ab12cd                   # the latest visit\n" +
			"  flow tail 20261201-093000-ab12cd 'review#2/verdict'\n" +
			"  flow tail -f 20261201-093000-ab12cd counts[0]/file",
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cursor != "" {
				return invalid("flow tail takes no cursor: a transcript is revised in place while its visit runs, so no line index stays valid; run flow tail again (or --follow) and compare")
			}
			if lines < 0 {
				return invalid("--lines %d: give how many of the newest lines to print, 0 or more (0: all of the last 256 KiB)", lines)
			}
			show := func(s string) string { return s }
			if isTerminal(a.stdout) {
				show = safeText
			}
			dir, err := a.findRun(args[:1], false)
			if err != nil {
				return err
			}
			visit := ""
			if len(args) == 2 {
				visit = args[1]
			}
			path, err := rundir.Transcript(dir, visit)
			if err != nil {
				facts, _ := rundir.ReadJournal(dir)
				if errors.Is(err, rundir.ErrNoVisit) { // a VISIT the run does not have is a bad argument
					return noVisit(err, facts, visit)
				}
				if out, ok := commandOutput(facts, visit); ok {
					fmt.Fprint(a.stdout, show(out))
					return nil
				}
				return &exitError{code: exitFailed, msg: err.Error()}
			}
			// Into a pipe the lines go as written (a pipe is for programs),
			// unless --raw=false says otherwise.
			if !cmd.Flags().Changed("raw") {
				raw = !isTerminal(a.stdout)
			}
			render := func(s string) string { return s }
			if strings.HasSuffix(path, ".jsonl") && !raw {
				render = readable
			}
			last := ""
			for {
				text, err := tailFile(path, lines)
				if err != nil {
					return &exitError{code: exitFailed, msg: fmt.Sprintf("reading the transcript of %s: %v", path, err)}
				}
				text = render(text)
				switch {
				case last == "":
					fmt.Fprint(a.stdout, show(text))
				case strings.HasPrefix(text, last):
					fmt.Fprint(a.stdout, show(text[len(last):]))
				case text != last:
					fmt.Fprint(a.stdout, show(text[commonLines(last, text):]))
				}
				last = text
				if !follow {
					return nil
				}
				select {
				case <-cmd.Context().Done():
					return nil
				case <-time.After(500 * time.Millisecond):
				}
			}
		},
	}
	cmd.Flags().IntVarP(&lines, "lines", "n", 40, "how many of the newest lines (0: all of the last 256 KiB)")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "poll and print what is new")
	cmd.Flags().BoolVar(&raw, "raw", false, "print a transcript's JSON lines as they are written (the default into a pipe)")
	cmd.Flags().StringVar(&cursor, "cursor", "", "refused: see the description")
	_ = cmd.Flags().MarkHidden("cursor")
	return cmd
}

// commonLines returns the byte offset in b after the lines b shares with the
// end of a, so a revised transcript prints only what changed.
func commonLines(a, b string) int {
	al, bl := strings.SplitAfter(a, "\n"), strings.SplitAfter(b, "\n")
	off := 0
	for i := 0; i < len(bl) && slices.Contains(al, bl[i]); i++ {
		off += len(bl[i])
	}
	return off
}

// tailFile returns the last n lines of path, reading at most tailLimit bytes.
func tailFile(path string, n int) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	off := max(st.Size()-tailLimit, 0)
	buf := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	if off > 0 {
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			buf = buf[i+1:]
		}
	}
	lines := strings.SplitAfter(string(buf), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if n > 0 && len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, ""), nil
}

func timeoutText(t string) string {
	if t == "" {
		return ""
	}
	return "timeout " + t
}
