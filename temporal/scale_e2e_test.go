package temporal

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/local"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/flows/osdisk"
	"github.com/flowrun/flow/internal/devserver"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/steps/run"
)

// counted runs commands with the real `run:` commander and counts how
// many times each visit's command ran.
type counted struct {
	inner engine.Commander
	mu    sync.Mutex
	runs  map[string]int
}

func (c *counted) Run(ctx context.Context, cmd *engine.Command) (*engine.CommandResult, error) {
	c.mu.Lock()
	c.runs[cmd.Visit]++
	c.mu.Unlock()
	return c.inner.Run(ctx, cmd)
}

// scaleCluster is a dev server with two in-process workers running real
// commands.
func scaleCluster(t *testing.T) (client.Client, string, *counted) {
	srv := devserver.Start(t)
	var c client.Client
	var err error
	for range 50 {
		if c, err = client.Dial(client.Options{HostPort: srv.Address, Logger: quiet{}}); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("dialing the dev server: %v\n%s", err, srv.Log())
	}
	queue := "flow-" + t.Name()
	cmds := &counted{inner: run.New(), runs: map[string]int{}}
	var stops []context.CancelFunc
	var wg sync.WaitGroup
	for range 2 {
		w := NewWorker(c, queue, &Activities{Leaves: local.Leaves{Commands: cmds}, RunsDir: t.TempDir()})
		ctx, stop := context.WithCancel(context.Background())
		stops = append(stops, stop)
		wg.Go(func() { _ = w.Run(ctx) })
	}
	t.Cleanup(func() {
		for _, stop := range stops {
			stop()
		}
		wg.Wait()
		c.Close()
	})
	return c, queue, cmds
}

// execution is one execution of a run's workflow: its history's length
// and its facts.
type execution struct {
	run    string
	events int
	facts  []*record.Fact
}

// runMap runs a map of n `run: ["true"]` items at concurrency k with the
// history bound limit, and returns the run's output and each execution
// of its workflow, following continue-as-new.
//
// With facts false it reads no execution's facts: a closed execution's
// query is answered by replaying its history, which for 10,000 events on
// a busy machine outlasts a query's deadline.
func runMap(t *testing.T, n, k, limit int, wait time.Duration, facts bool) (*RunOutput, []execution, *counted) {
	c, queue, cmds := scaleCluster(t)
	dir := t.TempDir()
	src := fmt.Sprintf("name: big\nnodes:\n  - id: each\n    map: '1..%d'\n    max: %d\n    concurrency: %d\n    do:\n      - id: t\n        run: [\"true\"]\n", n, n, k)
	file := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, diags := flows.Load(file, flows.Options{Disk: osdisk.OS, UserAgentDirs: []string{}})
	if diags.HasErrors() {
		t.Fatalf("load:\n%s", diags.Error())
	}
	id := rundir.NewRunID(time.Now())
	snap := local.NewSnapshot(id, plan, nil, rundir.Settings{WorkDir: dir, Concurrency: 8, TurnTimeout: "1m"})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	wr, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, WorkflowName,
		&RunInput{Snapshot: snap, Timing: Timing{HistoryEvents: limit}})
	if err != nil {
		t.Fatal(err)
	}
	var out RunOutput
	if err := wr.Get(ctx, &out); err != nil {
		t.Fatalf("the run workflow failed: %v", err)
	}
	if err := out.unpack(); err != nil {
		t.Fatal(err)
	}
	// The run's id is its last execution's once it ended: each execution
	// names the one it continued.
	var execs []execution
	for prev := wr.GetRunID(); prev != ""; {
		ex := execution{run: prev}
		prev = ""
		it := c.GetWorkflowHistory(ctx, id, ex.run, false, 0)
		var events []*historyEvent
		for it.HasNext() {
			e, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			events = append(events, e)
			if st := e.GetWorkflowExecutionStartedEventAttributes(); st != nil {
				prev = st.GetContinuedExecutionRunId()
			}
		}
		ex.events = len(events)
		for from := 0; facts; {
			v, err := c.QueryWorkflow(ctx, id, ex.run, QueryFacts, from)
			if err != nil {
				t.Fatal(err)
			}
			var page FactsPage
			if err := v.Get(&page); err != nil {
				t.Fatal(err)
			}
			ex.facts = append(ex.facts, page.Facts...)
			if from += len(page.Facts); len(page.Facts) == 0 || from >= page.Total {
				break
			}
		}
		execs = append([]execution{ex}, execs...)
	}
	return &out, execs, cmds
}

// checkMap checks a map run of n items: it succeeded with every item's
// value, each item's command ran once and ended once over all the
// executions, and no execution's history passed bound events.
func checkMap(t *testing.T, n, bound int, out *RunOutput, execs []execution, cmds *counted) {
	t.Helper()
	if !out.OK {
		t.Fatalf("the run failed: %+v", out.Failure.Root())
	}
	for i, ex := range execs {
		t.Logf("execution %d: %d history events, %d facts", i+1, ex.events, len(ex.facts))
	}
	node, _ := out.Values["each"].(map[string]any)
	each, _ := node["output"].([]any)
	if len(each) != n {
		t.Fatalf("the map's value has %d items, want %d", len(each), n)
	}
	ended := map[string]int{}
	runFacts := 0
	for i, ex := range execs {
		if ex.events > bound {
			t.Errorf("execution %d of the run has %d history events, more than %d", i+1, ex.events, bound)
		}
		for _, f := range ex.facts {
			switch {
			case f.Type == record.FactRun && f.Status == record.StatusRunning:
				runFacts++
			case f.Type == record.FactEnd && f.Node == "t":
				ended[f.Visit]++

			}
		}
	}
	if execs[0].facts == nil { // not read: the commands ran once each
		for i := 1; i <= n; i++ {
			if v := "each[" + strconv.Itoa(i) + "]/t"; cmds.runs[v] != 1 {
				t.Errorf("the command of %s ran %d times, want once", v, cmds.runs[v])
				break
			}
		}
		return
	}
	if runFacts != 1 {
		t.Errorf("the executions recorded %d run starts, want one: the run went on, it did not start again", runFacts)
	}
	for i := 1; i <= n; i++ {
		v := "each[" + strconv.Itoa(i) + "]/t"
		if ended[v] != 1 || cmds.runs[v] != 1 {
			t.Errorf("%s ended %d times and its command ran %d times, want once each", v, ended[v], cmds.runs[v])
			break
		}
	}
}

func TestE2EAMapOf2000ContinuesAsNewWithinItsBound(t *testing.T) {
	const n, limit = 2000, 2000
	out, execs, cmds := runMap(t, n, 8, limit, 4*time.Minute, true)
	if len(execs) < 2 {
		t.Errorf("the run had %d execution(s); its history should have passed %d events and continued as new", len(execs), limit)
	}
	// The leaves in flight when the bound is reached (at most the map's
	// concurrency) end after it: a few events each.
	checkMap(t, n, limit+8*6+50, out, execs, cmds)
}

// TestE2EAMapOf20000Completes is the scale that Temporal's history limit
// (51,200 events) bounded to about 14,000 items: it takes minutes on a
// small machine, so it runs when FLOW_TEST_SCALE is set (the bench task
// sets it).
func TestE2EAMapOf20000Completes(t *testing.T) {
	if os.Getenv("FLOW_TEST_SCALE") == "" {
		t.Skip("a map of 20,000 items: set FLOW_TEST_SCALE=1 to run it")
	}
	const n = 20000
	out, execs, cmds := runMap(t, n, 16, DefaultHistoryEvents, 30*time.Minute, false)
	checkMap(t, n, DefaultHistoryEvents+16*6+50, out, execs, cmds)
}

// TestE2ETheMirrorFollowsARunThatContinuesAsNew runs a map whose
// history passes its bound through Client.Execute: the run directory
// reads as one run, every item ended once, and the snapshot names the
// execution the run ended in, for flow resume.
func TestE2ETheMirrorFollowsARunThatContinuesAsNew(t *testing.T) {
	const n = 300
	cl := newCluster(t, &byWorker{name: "A"}, &byWorker{name: "B"})
	dir := t.TempDir()
	file := filepath.Join(dir, "big.yaml")
	src := fmt.Sprintf("name: big\nnodes:\n  - id: each\n    map: '1..%d'\n    max: %d\n    concurrency: 8\n    do:\n      - id: t\n        run: [\"true\"]\n", n, n)
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, diags := flows.Load(file, flows.Options{Disk: osdisk.OS, UserAgentDirs: []string{}})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	c := &Client{Client: cl.c, Address: cl.srv.Address, TaskQueue: cl.queue, Timing: Timing{HistoryEvents: 400}}
	runsDir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := c.Execute(ctx, plan, local.Config{RunsDir: runsDir, WorkDir: dir, Commands: echoCommands{}}, engine.Options{Concurrency: 8})
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK {
		t.Fatalf("the run failed: %+v", res.Failure.Root())
	}
	checkMirror(ctx, t, cl, runsDir, n)

	// Adopted afterwards (flow serve mirrors a scheduled run it did not
	// start), the mirror begins at the run's first execution.
	adopted := t.TempDir()
	if _, err := c.Adopt(ctx, adopted, res.RunID, nil, nil); err != nil {
		t.Fatal(err)
	}
	checkMirror(ctx, t, cl, adopted, n)
}

// checkMirror checks the one run mirrored in runsDir, a map of n items
// that continued as new.
func checkMirror(ctx context.Context, t *testing.T, cl *cluster, runsDir string, n int) {
	t.Helper()
	runs, err := rundir.List(runsDir)
	if err != nil || len(runs) != 1 {
		t.Fatalf("want one run, have %d (%v)", len(runs), err)
	}
	info := runs[0]
	if info.Status != record.StatusSucceeded {
		t.Errorf("the mirrored run is %s, want succeeded", info.Status)
	}
	starts, ended := 0, map[string]int{}
	for _, f := range info.Facts {
		switch {
		case f.Type == record.FactRun && f.Status == record.StatusRunning:
			starts++
		case f.Type == record.FactEnd && f.Node == "t":
			ended[f.Visit]++
		}
	}
	if starts != 1 {
		t.Errorf("the journal has %d run starts, want one", starts)
	}
	for i := 1; i <= n; i++ {
		if v := "each[" + strconv.Itoa(i) + "]/t"; ended[v] != 1 {
			t.Errorf("the journal has %d ends of %s, want one", ended[v], v)
			break
		}
	}
	snap, err := rundir.ReadSnapshot(info.Dir)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := cl.c.DescribeWorkflowExecution(ctx, snap.Run, "")
	if err != nil {
		t.Fatal(err)
	}
	if last := desc.GetWorkflowExecutionInfo().GetExecution().GetRunId(); snap.Temporal.Execution != last || snap.Temporal.Base == 0 {
		t.Errorf("the snapshot names execution %s with base %d; the run ended in %s, after facts of earlier executions", snap.Temporal.Execution, snap.Temporal.Base, last)
	}
}
