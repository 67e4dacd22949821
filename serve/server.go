package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sourcegraph/conc"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/runner"
)

// Config is what a Server serves and how. Dir is required; every other
// field has a documented default.
type Config struct {
	// Dir holds the flow files (*.yaml, *.yml; not below). Its .flow/
	// holds the server's lock and serve.jsonl.
	Dir string
	// Addr is where to listen; default 127.0.0.1:8080. An address other
	// than loopback needs Tokens.
	Addr string
	// Listener, if set, is used instead of listening on Addr (tests).
	Listener net.Listener
	// Tokens are the bearer tokens the API and the page accept. Without
	// any, the server takes every request, so it listens on loopback only.
	Tokens []Token
	// RunsDir holds run directories, as for `flow run`; default
	// .flow/runs under WorkDir.
	RunsDir string
	// WorkDir is where runs work; default the current directory.
	WorkDir string
	// Load says where agents come from and which drivers exist.
	Load flows.Options
	// Engine holds the walker's settings every run shares: the settings,
	// the configuration for snapshots. The server sets each run's RunID,
	// Input and Asker; OnEvent, if set, also gets every event of every
	// run.
	Engine engine.Options
	// Host is the wiring every run's host shares where the backend gives
	// none (a Runner's gives the process's drivers and command runner);
	// each run's RunsDir and WorkDir are the server's (above), so Host
	// gives neither.
	Host runner.Host
	// MaxRuns caps the runs alive at once; the rest wait in a queue, first
	// come first served. Default 4.
	MaxRuns int
	// MaxQueued caps the runs waiting in that queue; a run past it is
	// refused (429). Default DefaultMaxQueued.
	MaxQueued int
	// Hosts are the names, besides loopback ones, a request's Host may
	// give (the server's name behind a proxy, say); any other is 421.
	Hosts []string
	// MaxConnsPerClient caps the connections one client address holds
	// open; default DefaultMaxConnsPerClient.
	MaxConnsPerClient int
	// ReadTimeout bounds the reading of a whole request (an event stream
	// lifts it); default ReadTimeout.
	ReadTimeout time.Duration
	// Poll is how often Dir is read for changed, added or removed files;
	// default 1s.
	Poll time.Duration
	// Log receives what the server does; default text on stderr.
	Log *slog.Logger
	// Backend walks the runs; default runner.Local of Load. A
	// runner.Temporal walks every run on Temporal and mirrors it into
	// RunsDir, and makes the schedules Temporal Schedules (flow serve
	// --temporal, docs/temporal.md).
	Backend runner.Backend
}

// Server is `flow serve`: made by New, run once by Run.
type Server struct {
	cfg     Config
	log     *slog.Logger
	catalog *catalog
	sched   *scheduler
	runs    *runs
	asks    *asks
	hub     *hub
	metrics *metrics
	waker   *waker // wakes waiting runs (docs/waits.md)
	state   *stateLog
	// schedules are the backend's schedules of the directory's flows
	// (Temporal Schedules), if it keeps them; the scheduler then fires
	// nothing itself.
	schedules runner.Schedules

	mu       sync.Mutex
	addr     string
	triggers map[string]string // run id -> why this server (or an earlier one) started it
	problems []string          // recent runs that did not start, for the page
	ready    chan struct{}     // closed once the server listens
}

// BusyError says another server serves the directory.
type BusyError struct {
	Dir  string
	Lock rundir.Lock
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("%s is served already by flow serve, pid %d, at http://%s (stop it, or serve another directory)", e.Dir, e.Lock.PID, e.Lock.Addr)
}

// New checks cfg and makes a server. An address other than loopback
// without tokens is refused: the API starts runs and answers approvals.
func New(cfg Config) (*Server, error) {
	if cfg.Dir == "" {
		return nil, errors.New("serve: no flow directory")
	}
	if st, err := os.Stat(cfg.Dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("serve: %s is not a directory", cfg.Dir)
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:8080"
	}
	if cfg.Listener == nil && len(cfg.Tokens) == 0 && !Loopback(cfg.Addr) {
		return nil, fmt.Errorf("serve: %s is not a loopback address: give --token-file (lines of `name token`) so that only holders of a token can start runs and answer approvals", cfg.Addr)
	}
	if cfg.Host.RunsDir != "" || cfg.Host.WorkDir != "" {
		return nil, fmt.Errorf("serve: Config.Host gives RunsDir or WorkDir: a served run's are Config.RunsDir and Config.WorkDir")
	}
	if cfg.WorkDir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("serve: finding the working directory: %w", err)
		}
		cfg.WorkDir = wd
	}
	if cfg.RunsDir == "" {
		cfg.RunsDir = filepath.Join(cfg.WorkDir, ".flow", "runs")
	}
	if cfg.MaxRuns <= 0 {
		cfg.MaxRuns = 4
	}
	if cfg.MaxQueued <= 0 {
		cfg.MaxQueued = DefaultMaxQueued
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = ReadTimeout
	}
	if cfg.MaxConnsPerClient <= 0 {
		cfg.MaxConnsPerClient = DefaultMaxConnsPerClient
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	s := &Server{cfg: cfg, log: cfg.Log, catalog: newCatalog(cfg.Dir, cfg.Load), hub: newHub(), metrics: newMetrics(),
		triggers: map[string]string{}, ready: make(chan struct{})}
	s.asks = newAsks(s.changed)
	s.waker = newWaker(s)
	if cfg.Backend == nil {
		s.cfg.Backend = runner.Local{Load: cfg.Load}
	}
	s.schedules = s.cfg.Backend.Schedules(cfg.Dir)
	return s, nil
}

// host is the wiring of a run's host: Host, in RunsDir, working in
// WorkDir.
func (s *Server) host() runner.Host {
	h := s.cfg.Host
	h.RunsDir, h.WorkDir = s.cfg.RunsDir, s.cfg.WorkDir
	return h
}

// Loopback reports whether addr (host:port) listens on loopback only.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Addr is the address the server listens on, once Ready is closed.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Ready is closed once the server listens and has started what the last
// server left.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Run serves until ctx ends, then stops firing, stops every run it runs
// (resumable: the next server resumes them) and returns when they have
// ended. It returns an error if it cannot start: the directory is served
// already (*BusyError), the address is taken, the directory is unreadable.
func (s *Server) Run(ctx context.Context) error {
	flowDir := filepath.Join(s.cfg.Dir, ".flow")
	if err := rundir.MkdirIgnored(flowDir); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	lockPath := filepath.Join(flowDir, "serve.lock")
	busy := func() error {
		if l, err := rundir.ReadLock(lockPath); err == nil && l.Live() {
			return &BusyError{Dir: s.cfg.Dir, Lock: *l}
		}
		return nil
	}
	if err := busy(); err != nil {
		return err
	}
	ln := s.cfg.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", s.cfg.Addr); err != nil {
			return fmt.Errorf("serve: %w", err)
		}
	}
	if err := rundir.TakeLock(lockPath, ln.Addr().String()); err != nil {
		_ = ln.Close()
		if berr := busy(); berr != nil {
			return berr
		}
		return fmt.Errorf("serve: %w", err)
	}
	defer func() { _ = rundir.ReleaseLock(lockPath) }()
	past, err := s.boot(ctx, flowDir)
	if err != nil {
		_ = ln.Close()
		return fmt.Errorf("serve: %w", err)
	}
	defer func() { _ = s.state.close() }()
	s.mu.Lock()
	s.addr = ln.Addr().String()
	s.mu.Unlock()
	s.record(Record{Type: RecordServe, PID: os.Getpid(), Addr: s.Addr()})
	s.resumeLeft(past)
	s.waker.scan()
	s.sched.catchup(past.lastFire, time.Now())

	httpCtx, endHTTP := context.WithCancel(context.WithoutCancel(ctx))
	defer endHTTP()
	ln = newCapListener(ln, s.cfg.MaxConnsPerClient, maxConns())
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: ReadHeaderTimeout, ReadTimeout: s.cfg.ReadTimeout, IdleTimeout: IdleTimeout,
		BaseContext: func(net.Listener) context.Context { return httpCtx }, ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	loops, endLoops := context.WithCancel(ctx)
	defer endLoops()
	var wg conc.WaitGroup
	served := make(chan error, 1)
	wg.Go(func() { served <- srv.Serve(ln) })
	wg.Go(func() { s.sched.loop(loops) })
	wg.Go(func() { s.watch(loops) })
	wg.Go(func() { s.waker.loop(loops) })
	if s.schedules != nil {
		wg.Go(func() { s.adoptFired(loops) })
	}
	s.log.Info("serving", "url", "http://"+s.Addr(), "dir", s.cfg.Dir, "runs", s.cfg.RunsDir)
	close(s.ready)

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-served:
	}
	s.log.Info("shutting down: firing stopped; stopping running runs (they stay resumable)")
	endLoops()
	s.runs.shutdown()
	endHTTP()
	shutCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutCtx)
	wg.Wait()
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", serveErr)
	}
	return nil
}

// boot opens serve.jsonl in flowDir, reads what earlier servers left,
// and loads the directory. Runs started from then on are children of
// ctx's values but not of its cancellation: they are stopped one by one,
// with a cause.
func (s *Server) boot(ctx context.Context, flowDir string) (pastState, error) {
	state, recs, err := openState(filepath.Join(flowDir, "serve.jsonl"))
	if err != nil {
		return pastState{}, err
	}
	s.state = state
	past := readPast(recs)
	for id, r := range past.last {
		if r.Type == RecordRun {
			s.triggers[id] = r.Trigger
		}
	}
	// A SIGTERM must end runs as `stopped`, and only after firing stopped.
	s.runs = &runs{s: s, ctx: context.WithoutCancel(ctx), max: s.cfg.MaxRuns, maxQueued: s.cfg.MaxQueued, active: map[string]*active{}}
	s.sched = newScheduler(s, past.recent)
	if _, err := s.reload(); err != nil {
		_ = state.close()
		return pastState{}, err
	}
	return past, nil
}

// watch reloads the directory every Poll until ctx ends.
func (s *Server) watch(ctx context.Context) {
	t := time.NewTicker(s.cfg.Poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := s.reload(); err != nil {
				s.log.Error("reading the flow directory", "err", err)
			}
		}
	}
}

// reload loads changed files, reports the broken ones by name, and hands
// the schedules to the scheduler.
func (s *Server) reload() ([]*entry, error) {
	before := s.catalog.changes()
	changed, err := s.catalog.reload()
	if err != nil || s.catalog.changes() == before { // a removed file changes no entry, but the set
		return changed, err
	}
	for _, e := range changed {
		if e.Broken() {
			s.log.Error("flow file does not load; skipped until it does", "file", e.File, "errors", e.Diags.Error())
			s.record(Record{Type: RecordBroken, Flow: e.Name, Reason: e.Diags.Error()})
			continue
		}
		s.log.Info("flow loaded", "flow", e.Name, "file", e.File)
	}
	if s.schedules != nil {
		s.syncSchedules()
	} else {
		s.sched.update(s.catalog.all(), time.Now())
	}
	s.changed("")
	return changed, nil
}

// resumeLeft resumes the runs an earlier server started and left unended:
// interrupted (it died), or stopped as it shut down. A run stopped through
// the API stays stopped.
func (s *Server) resumeLeft(past pastState) {
	for _, id := range past.owned {
		if !runIDRE().MatchString(id) { // serve.jsonl names run ids, not paths
			continue
		}
		dir, ok := rundir.Find(s.cfg.RunsDir, id)
		if !ok {
			continue
		}
		info, err := rundir.Inspect(dir)
		if err != nil || !info.Resumable {
			continue
		}
		left := info.Status == record.StatusInterrupted ||
			info.Status == record.StatusStopped && past.last[id].Type == RecordShutdown
		if !left {
			continue
		}
		s.log.Info("resuming a run the last server left", "run", id, "flow", info.Flow, "status", info.Status)
		if _, err := s.runs.submit(&job{id: id, flow: info.Flow, trigger: TriggerResume, resumeDir: dir}); err != nil {
			s.log.Error("resuming", "run", id, "err", err)
		}
	}
}

// record appends r to serve.jsonl.
func (s *Server) record(r Record) {
	if r.Type == RecordRun {
		s.mu.Lock()
		if _, ok := s.triggers[r.Run]; !ok {
			s.triggers[r.Run] = r.Trigger
		}
		s.mu.Unlock()
	}
	if err := s.state.add(r); err != nil {
		s.log.Error("recording in serve.jsonl", "err", err)
	}
}

func (s *Server) trigger(run string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.triggers[run]
}

// problem keeps a line for the page: a run that did not start.
func (s *Server) problem(msg string) {
	s.mu.Lock()
	s.problems = append(s.problems, stamp(time.Now())+" "+msg)
	if n := len(s.problems); n > 20 {
		s.problems = s.problems[n-20:]
	}
	s.mu.Unlock()
	s.changed("")
}

// changed tells the page's streams that what they show changed.
func (s *Server) changed(run string) {
	s.hub.publish(&record.Event{Time: time.Now(), Type: EventChanged, Run: run})
}
