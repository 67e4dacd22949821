package sweep

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/runner"
	"github.com/flowrun/flow/schema"
)

// Sweep is a sweep directory, open to run its cells or report on them. It
// is safe for concurrent use: cells end from many goroutines.
type Sweep struct {
	dir string

	mu sync.Mutex // guards f and every cell in it
	f  *File

	reportMu sync.Mutex // one writer of the reports at a time
}

// Config is how a new sweep runs.
type Config struct {
	Spec        Spec
	Budget      Budget
	Concurrency int           // cells at once; default 1
	Timeout     time.Duration // --timeout: the bound on every turn; 0 leaves it to the flows
	WorkDir     string        // where the runs work; default the current directory
	Temporal    *Temporal     // the server the cells run on, if on Temporal (RunOptions.Backend walks them there)
}

// Create checks cfg against plan (Check) and makes the sweep's directory
// under sweepsDir with its sweep.json, holding its lock (Lock) until
// Unlock. Nothing runs yet.
func Create(sweepsDir string, plan *flows.Plan, cfg Config) (*Sweep, error) {
	f, err := prepare(plan, cfg)
	if err != nil {
		return nil, err
	}
	if err := rundir.MkdirIgnored(sweepsDir); err != nil {
		return nil, fmt.Errorf("creating sweeps directory: %w", err)
	}
	for attempt := 0; ; attempt++ {
		f.ID = NewID(time.Now())
		err := os.Mkdir(filepath.Join(sweepsDir, f.ID), 0o755)
		if err == nil {
			break
		}
		if !errors.Is(err, os.ErrExist) || attempt == 10 {
			return nil, fmt.Errorf("creating sweep directory: %w", err)
		}
	}
	s := &Sweep{dir: filepath.Join(sweepsDir, f.ID), f: f}
	if err := s.Lock(); err != nil {
		return nil, err
	}
	if err := writeFile(s.dir, f); err != nil {
		_ = s.Unlock()
		return nil, err
	}
	return s, nil
}

// Check checks cfg against plan as Create does — the names are fit for
// the reports, the baseline is an assignment, every cell's input fits
// the flow's — and makes nothing: `flow sweep --dry-run` refuses what the
// sweep would.
func Check(plan *flows.Plan, cfg Config) error {
	_, err := prepare(plan, cfg)
	return err
}

// prepare makes the sweep file of a new sweep, without its id.
func prepare(plan *flows.Plan, cfg Config) (*File, error) {
	spec := cfg.Spec
	spec.Repeat = max(spec.Repeat, 1)
	if len(spec.Tasks) == 0 {
		spec.Tasks = []Task{{ID: "t1"}}
	}
	if err := spec.checkNames(); err != nil {
		return nil, &engine.InputError{Msg: err.Error()}
	}
	as := spec.Assignments()
	if _, err := baseline(as, spec.Baseline); err != nil {
		return nil, &engine.InputError{Msg: err.Error()}
	}
	cells, err := spec.cells()
	if err != nil {
		return nil, &engine.InputError{Msg: err.Error()}
	}
	for _, c := range cells[:len(cells)/len(as)] { // every assignment runs the same inputs
		if c.Input, err = runner.CheckInput(plan, c.Input); err != nil {
			return nil, &engine.InputError{Msg: fmt.Sprintf("task %s: %v", c.Task, err)}
		}
	}
	for i := len(cells) / len(as); i < len(cells); i++ {
		cells[i].Input = cells[i%(len(cells)/len(as))].Input
	}
	if cfg.WorkDir == "" {
		if cfg.WorkDir, err = os.Getwd(); err != nil {
			return nil, fmt.Errorf("finding the working directory: %w", err)
		}
	}
	file, err := filepath.Abs(plan.Root.File)
	if err != nil {
		return nil, fmt.Errorf("finding the flow file: %w", err)
	}
	f := &File{Version: fileVersion, Flow: plan.Root.Name, FlowFile: file, Source: string(plan.Root.Doc.Source),
		WorkDir: cfg.WorkDir, Created: time.Now().UTC(), Spec: spec, Budget: cfg.Budget,
		Concurrency: max(cfg.Concurrency, 1), Temporal: cfg.Temporal, Assignments: as, ParamSets: spec.ParamSets(), Cells: cells}
	if sw := plan.Root.Sweep; sw != nil && sw.Score != nil {
		f.Score = sw.Score.Source
	}
	if cfg.Timeout > 0 {
		f.Timeout = cfg.Timeout.String()
	}
	return f, nil
}

// Lock takes the sweep directory's lock.json for this process, as a run
// takes its own: one process runs a sweep's cells at a time, so no cell
// is paid for twice and sweep.json has one writer. A lock a live process
// holds is an error naming its pid.
func (s *Sweep) Lock() error {
	err := rundir.TakeLock(filepath.Join(s.dir, lockFile), "")
	if errors.Is(err, rundir.ErrLocked) {
		return &LockedError{Sweep: s.f.ID, Err: err}
	}
	return err
}

// Unlock gives the lock back.
func (s *Sweep) Unlock() error { return rundir.ReleaseLock(filepath.Join(s.dir, lockFile)) }

// LockedError says another live process runs the sweep.
type LockedError struct {
	Sweep string
	Err   error
}

func (e *LockedError) Error() string {
	msg := strings.TrimPrefix(e.Err.Error(), rundir.ErrLocked.Error()+": ")
	return fmt.Sprintf("sweep %s is being run by another flow sweep: %s", e.Sweep, strings.Replace(msg, "a flow running this run", "a flow sweep running this sweep", 1))
}

func (e *LockedError) Unwrap() error { return e.Err }

// Open opens the sweep in dir (see Find).
func Open(dir string) (*Sweep, error) {
	f, err := readFile(dir)
	if err != nil {
		return nil, err
	}
	return &Sweep{dir: dir, f: f}, nil
}

// Dir is the sweep's directory.
func (s *Sweep) Dir() string { return s.dir }

// ID is the sweep's id.
func (s *Sweep) ID() string { return s.f.ID }

// CellsDir is the directory of the cells' run directories: `flow show`
// and `flow resume` take any of them.
func (s *Sweep) CellsDir() string { return filepath.Join(s.dir, cellsDir) }

// Reports lists the report files, as the sweep writes them after every cell.
func (s *Sweep) Reports() []string {
	var out []string
	for _, ext := range []string{".md", ".csv", ".json", ".html"} {
		out = append(out, filepath.Join(s.dir, reportName+ext))
	}
	return out
}

// Snapshot returns a copy of the sweep file as it is now.
func (s *Sweep) Snapshot() *File {
	s.mu.Lock()
	defer s.mu.Unlock()
	cp := *s.f
	cp.Cells = make([]*Cell, len(s.f.Cells))
	for i, c := range s.f.Cells {
		cc := *c
		cp.Cells[i] = &cc
	}
	return &cp
}

// SetBudget replaces the sweep's budget (a resume may raise it).
func (s *Sweep) SetBudget(b Budget) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.f.Budget = b
	return writeFile(s.dir, s.f)
}

// SetTemporal records the Temporal server the cells run on from now on (a
// resume with --temporal); nil leaves the record as it is.
func (s *Sweep) SetTemporal(t *Temporal) error {
	if t == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.f.Temporal = t
	return writeFile(s.dir, s.f)
}

// Settings are the run-wide settings every cell starts from, before its
// assignment: the sweep's --timeout and the configured turn timeout.
func (s *Sweep) Settings(turnTimeout time.Duration) flows.Settings {
	d, _ := time.ParseDuration(s.f.Timeout)
	return flows.Settings{Timeout: d, TurnTimeout: turnTimeout}
}

// LoadPlan loads the flow the sweep runs: the file as it is on disk if it
// has not changed, else the text the sweep read (with a note saying so),
// so that every cell of one sweep runs the same flow.
func (s *Sweep) LoadPlan(opts flows.Options) (*flows.Plan, []string, schema.Diagnostics) {
	if opts.WorkDir == "" {
		opts.WorkDir = s.f.WorkDir
	}
	if now, err := os.ReadFile(s.f.FlowFile); err == nil && string(now) == s.f.Source {
		plan, diags := flows.LoadSource(s.f.FlowFile, now, opts)
		return plan, nil, diags
	}
	plan, diags := flows.LoadSource(s.f.FlowFile, []byte(s.f.Source), opts)
	return plan, []string{s.f.FlowFile + " changed since the sweep started; running the sweep's copy of it"}, diags
}

func (s *Sweep) saveLocked() error { return writeFile(s.dir, s.f) }
