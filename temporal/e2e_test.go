package temporal

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sourcegraph/conc"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/local"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/internal/devserver"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/schema"
)

// cluster is a dev server with in-process workers, each with a driver of
// its own that says which worker answered.
type cluster struct {
	t       *testing.T
	srv     *devserver.Server
	c       client.Client
	queue   string
	workers []*Worker
	stops   []context.CancelFunc
	wg      conc.WaitGroup
}

func newCluster(t *testing.T, drivers ...engine.Driver) *cluster {
	return newClusterOf(t, 0, drivers...)
}

// newClusterOf is newCluster with workers that each run at most
// concurrency visits at once (0: Temporal's default).
func newClusterOf(t *testing.T, concurrency int, drivers ...engine.Driver) *cluster {
	return newClusterWith(t, concurrency, func(int) engine.Commander { return echoCommands{} }, drivers...)
}

// newClusterWith is newClusterOf with the commands of worker i run by
// commands(i).
func newClusterWith(t *testing.T, concurrency int, commands func(i int) engine.Commander, drivers ...engine.Driver) *cluster {
	srv := devserver.Start(t)
	var c client.Client
	var err error
	for range 50 { // the frontend listens a moment before it serves
		if c, err = client.Dial(client.Options{HostPort: srv.Address, Logger: quiet{}}); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("dialing the dev server: %v\n%s", err, srv.Log())
	}
	cl := &cluster{t: t, srv: srv, c: c, queue: "flow-" + strings.ReplaceAll(t.Name(), "/", "-")}
	for i, d := range drivers {
		acts := &Activities{Leaves: local.Leaves{Drivers: map[string]engine.Driver{"exec": d}, Commands: commands(i)}, RunsDir: t.TempDir(), Concurrency: concurrency}
		w := NewWorker(c, cl.queue, acts)
		ctx, stop := context.WithCancel(context.Background())
		cl.workers = append(cl.workers, w)
		cl.stops = append(cl.stops, stop)
		cl.wg.Go(func() { _ = w.Run(ctx) })
	}
	t.Cleanup(func() {
		for _, stop := range cl.stops {
			stop()
		}
		cl.wg.Wait()
		c.Close()
	})
	return cl
}

// run starts the flow src as a workflow and waits for its end.
func (cl *cluster) run(src string, timing Timing) (*RunOutput, []*record.Fact, string) {
	t := cl.t
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "f.yaml")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, diags := flows.Load(file, flows.Options{UserAgentDirs: []string{}})
	if diags.HasErrors() {
		t.Fatalf("load:\n%s", diags.Error())
	}
	id := rundir.NewRunID(time.Now())
	snap := local.NewSnapshot(id, plan, nil, rundir.Settings{WorkDir: dir, Concurrency: 8, TurnTimeout: "1m"})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	run, err := cl.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: cl.queue}, WorkflowName, &RunInput{Snapshot: snap, Timing: timing})
	if err != nil {
		t.Fatal(err)
	}
	var out RunOutput
	if err := run.Get(ctx, &out); err != nil {
		t.Fatalf("the run workflow failed: %v", err)
	}
	v, err := cl.c.QueryWorkflow(ctx, id, run.GetRunID(), QueryFacts, 0)
	if err != nil {
		t.Fatal(err)
	}
	var page FactsPage
	if err := v.Get(&page); err != nil {
		t.Fatal(err)
	}
	cl.replays(ctx, id, run.GetRunID())
	return &out, page.Facts, id
}

// replays checks that the workflow's history replays without a
// nondeterminism error: the walker is deterministic on Temporal.
func (cl *cluster) replays(ctx context.Context, id, runID string) {
	cl.t.Helper()
	iter := cl.c.GetWorkflowHistory(ctx, id, runID, false, 0)
	var events []*historyEvent
	for iter.HasNext() {
		e, err := iter.Next()
		if err != nil {
			cl.t.Fatal(err)
		}
		events = append(events, e)
	}
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(Workflow, workflow.RegisterOptions{Name: WorkflowName})
	if err := r.ReplayWorkflowHistory(quiet{}, &history{Events: events}); err != nil {
		cl.t.Errorf("the run's history does not replay: %v", err)
	}
}

// byWorker is a driver that answers with its worker's name, keeps a
// session per scope, and can hold a turn until the test lets it go.
type byWorker struct {
	name   string
	mu     sync.Mutex
	turns  []string // visit=session given
	onTurn func(d *byWorker, t *engine.Turn)
}

func (d *byWorker) Turn(ctx context.Context, t *engine.Turn) (*engine.TurnResult, error) {
	d.mu.Lock()
	d.turns = append(d.turns, t.Visit+"="+t.Session)
	d.mu.Unlock()
	if d.onTurn != nil {
		d.onTurn(d, t)
	}
	session := t.Session
	if session == "" {
		session = d.name + "-session-" + t.Visit
	}
	return &engine.TurnResult{Status: engine.Completed, Output: d.name, Session: session}, nil
}

func (d *byWorker) ran() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string{}, d.turns...)
}

func TestE2EMemoryScopesStayOnTheirWorkers(t *testing.T) {
	a, b := &byWorker{name: "A"}, &byWorker{name: "B"}
	cl := newCluster(t, a, b)
	out, facts, _ := cl.run(`name: f
`+testAgents+`nodes:
  - id: each
    map: '[1, 2, 3, 4, 5, 6]'
    max: 6
    concurrency: 6
    do:
      - id: rounds
        loop: {until: 'false', max: 3}
        do: [{id: code, agent: worker, memory: rounds, prompt: go}]
        on_fail: continue
`, Timing{Heartbeat: 2 * time.Second, SessionWait: 5 * time.Second})
	if !out.OK {
		t.Fatalf("run failed: %+v", out.Failure)
	}
	// Every later turn of a scope ran where its first did, and continued
	// its session.
	who := map[string]string{} // scope -> worker of its first turn
	for _, d := range []*byWorker{a, b} {
		for _, turn := range d.ran() {
			visit, session, _ := strings.Cut(turn, "=")
			scope := visit[:strings.Index(visit, "#")]
			if session == "" {
				who[scope] = d.name
			}
		}
	}
	for _, d := range []*byWorker{a, b} {
		for _, turn := range d.ran() {
			visit, session, _ := strings.Cut(turn, "=")
			scope := visit[:strings.Index(visit, "#")]
			if session != "" && (who[scope] != d.name || !strings.HasPrefix(session, d.name+"-session-"+scope+"#1/")) {
				t.Errorf("%s ran on worker %s with session %q; its scope's first turn ran on %s", visit, d.name, session, who[scope])
			}
		}
	}
	if len(a.ran())+len(b.ran()) != 18 || len(a.ran()) == 0 || len(b.ran()) == 0 {
		t.Errorf("worker A ran %d turns and B %d, want 18 between both, some each", len(a.ran()), len(b.ran()))
	}
	for _, f := range facts {
		if f.Type == record.FactEnd && f.Kind == schema.KindAgent && !strings.Contains(f.Session, "|") {
			t.Errorf("%s journaled session %q, which names no worker", f.Visit, f.Session)
		}
	}
}

func TestE2EAWorkersDeathDuringAScopeIsAVisibleFailure(t *testing.T) {
	var cl *cluster
	var once sync.Once
	release := make(chan struct{})
	hold := func(d *byWorker, t *engine.Turn) {
		if t.Visit != "rounds#1/code" {
			return
		}
		once.Do(func() {
			// The worker holding the scope's session goes away while its
			// first turn ends: its own queue has no poller any more.
			w := cl.workers[0]
			if d.name == "B" {
				w = cl.workers[1]
			}
			w.own.Stop()
			close(release)
		})
		<-release
	}
	a, b := &byWorker{name: "A", onTurn: hold}, &byWorker{name: "B", onTurn: hold}
	cl = newCluster(t, a, b)
	out, facts, _ := cl.run(`name: f
`+testAgents+`nodes:
  - id: rounds
    loop: {until: 'false', max: 3}
    do: [{id: code, agent: worker, memory: rounds, prompt: go, retry: 2}]
`, Timing{Heartbeat: 2 * time.Second, SessionWait: 2 * time.Second})
	if out.OK {
		t.Fatal("the run succeeded: the scope went on without its session")
	}
	root := out.Failure.Root()
	if root.Kind != schema.FailUnavailable || root.Visit != "rounds#2/code" || !strings.Contains(root.Message, "holds this memory scope's session") {
		t.Fatalf("the run failed %s at %s: %s; want unavailable at rounds#2/code naming the worker", root.Kind, root.Visit, root.Message)
	}
	held := cl.workers[0].Queue()
	if len(b.ran()) > 0 && strings.HasPrefix(b.ran()[0], "rounds#1/code") {
		held = cl.workers[1].Queue()
	}
	if !strings.Contains(root.Message, held) {
		t.Errorf("the failure %q does not name the worker %s", root.Message, held)
	}
	if n := len(a.ran()) + len(b.ran()); n != 1 {
		t.Errorf("%d turns ran, want only the first: a new session started silently (%v %v)", n, a.ran(), b.ran())
	}
	expectEnds(t, facts, map[string]string{"rounds": "child", "rounds#1/code": "ok", "rounds#2/code": "unavailable"})
}

// quiet drops the SDK's log lines.
type quiet struct{}

func (quiet) Debug(string, ...any) {}
func (quiet) Info(string, ...any)  {}
func (quiet) Warn(string, ...any)  {}
func (quiet) Error(string, ...any) {}

type history = historypb.History
