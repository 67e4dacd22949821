package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/rundir"
)

// exitWaiting is the exit code of a run that ended waiting (README.md,
// Commands; docs/waits.md): it holds no process, and goes on when resumed.
const exitWaiting = 4

func (a *app) signalCmd() *cobra.Command {
	var data string
	cmd := &cobra.Command{
		Use:   "signal RUN EVENT [--data JSON|@FILE]",
		Short: "Deliver an event to a run's wait, whether or not a process holds the run",
		Long: "Write EVENT, with its JSON data (default null), into the run directory of RUN\n" +
			"(an id or a run directory). A wait for EVENT takes it when it is reached, or,\n" +
			"when the run waits on it already, once it is resumed (flow resume RUN; flow\n" +
			"serve resumes it by itself). The same data delivered again is taken as\n" +
			"delivered; other data is refused (exit 1). A run on Temporal takes the event as a\n" +
			"signal to its workflow, and goes on by itself (docs/waits.md, On Temporal).",
		Example: "  flow signal 20261201-093000-ab12cd deploy-done --data '{\"ok\": true}'\n" +
			"  flow signal last review --data @review.json",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := a.findRun(args[:1], false)
			if err != nil {
				return err
			}
			body, err := signalData(data)
			if err != nil {
				return invalid("--data: %v", err)
			}
			if snap, err := rundir.ReadSnapshot(dir); err == nil && snap.Temporal != nil {
				return a.signalTemporal(cmd.Context(), dir, snap.Temporal, args[1], body)
			}
			already, err := rundir.Deliver(dir, args[1], body, "flow signal", time.Now())
			if err := a.delivered(dir, args[1], already, err); err != nil {
				return err
			}
			if info, err := rundir.Inspect(dir); err == nil && info.Status == rundir.StatusWaiting {
				fmt.Fprintf(a.stderr, "the run waits; go on with `flow resume %s`\n", info.ID)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&data, "data", "", "the event's data: JSON, or @FILE to read it from FILE (@- reads standard input)")
	return cmd
}

// delivered says how a delivery went: exit 1 for other data than
// delivered before, 2 for a delivery that could not be made.
func (a *app) delivered(dir, event string, already bool, err error) error {
	switch {
	case errors.Is(err, rundir.ErrSignalConflict):
		return &exitError{code: exitFailed, msg: err.Error()}
	case err != nil:
		return invalid("%v", err)
	case already:
		fmt.Fprintf(a.stderr, "event %s was delivered to run %s already, with the same data\n", event, dirID(dir))
	default:
		fmt.Fprintf(a.stderr, "delivered event %s to run %s\n", event, dirID(dir))
	}
	return nil
}

// signalData is --data: JSON as given, or read from @FILE; none is null.
func signalData(s string) ([]byte, error) {
	switch {
	case s == "":
		return []byte("null"), nil
	case s == "@-":
		return io.ReadAll(io.LimitReader(os.Stdin, 16<<20))
	case strings.HasPrefix(s, "@"):
		return os.ReadFile(s[1:])
	}
	return []byte(s), nil
}

func dirID(dir string) string {
	if info, err := rundir.Inspect(dir); err == nil {
		return info.ID
	}
	return dir
}

// waitingSummary says, for a run that ended waiting, what each of its
// waits waits for, since and until when, and how the run goes on.
func (a *app) waitingSummary(res *engine.Result) {
	fmt.Fprintf(a.stderr, "run %s waiting\n", res.RunID)
	info, err := rundir.Inspect(res.Dir)
	if err != nil {
		return
	}
	for _, w := range info.Waiting {
		fmt.Fprintf(a.stderr, "\t%s: %s\n", w.Visit, waitText(w.Wait))
		if w.Event != "" {
			fmt.Fprintf(a.stderr, "\tdeliver it: flow signal %s %s --data '<JSON>'\n", res.RunID, w.Event)
		}
	}
	fmt.Fprintf(a.stderr, "\trun directory: %s\n", safeText(res.Dir))
	fmt.Fprintf(a.stderr, "nothing holds the run while it waits; go on with `flow resume %s` once its wait is over, or let `flow serve` wake it\n", res.RunID)
}

// waitText says a wait as a person reads it, in local time with its zone:
// "waiting on event deploy since 14:02 CET (2026-12-03), until 16:02 CET".
func waitText(w record.Wait) string {
	s := "waiting on " + w.What() + " since " + when(w.Since)
	if w.Until != nil {
		s += ", until " + when(*w.Until)
	}
	return s
}

func when(t time.Time) string {
	return t.Local().Format("2006-01-02 15:04:05 MST")
}
