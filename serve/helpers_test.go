package serve

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/flows/osdisk"
	"github.com/flowrun/flow/runner"
)

// fakeCommands runs `run:` nodes without processes: [sleep, N] waits N
// seconds of the clock (a synctest bubble's, in scheduler tests), anything
// else passes at once. It counts the runs of each flow alive at once.
type fakeCommands struct {
	mu      sync.Mutex
	alive   map[string]int // run id -> sleeping visits
	maxLive int            // the most runs sleeping at once
}

func (f *fakeCommands) Run(ctx context.Context, c *engine.Command) (*engine.CommandResult, error) {
	if len(c.Argv) == 2 && c.Argv[0] == "sleep" {
		d, err := time.ParseDuration(c.Argv[1] + "s")
		if err != nil {
			return nil, err
		}
		f.mu.Lock()
		if f.alive == nil {
			f.alive = map[string]int{}
		}
		f.alive[c.RunID]++
		f.maxLive = max(f.maxLive, len(f.alive))
		f.mu.Unlock()
		defer func() {
			f.mu.Lock()
			if f.alive[c.RunID]--; f.alive[c.RunID] == 0 {
				delete(f.alive, c.RunID)
			}
			f.mu.Unlock()
		}()
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
	return &engine.CommandResult{Passed: true, Report: strings.Join(c.Argv, " ")}, nil
}

func (f *fakeCommands) most() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.maxLive
}

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// booted is a server with its state, catalogue, scheduler and runs, but
// no listener and no loops: a test drives what it needs.
type booted struct {
	*Server
	cmds *fakeCommands
	dir  string // holds flows/ and runs/
	past pastState
}

// boot makes a server over files (name -> content, in DIR) and boots it.
// edit may change the configuration first. Its runs are shut down when
// the test ends.
func boot(t *testing.T, files map[string]string, edit func(*Config)) *booted {
	t.Helper()
	dir := t.TempDir()
	flowDir := filepath.Join(dir, "flows")
	if err := os.MkdirAll(filepath.Join(flowDir, ".flow"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(flowDir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmds := &fakeCommands{}
	cfg := Config{Dir: flowDir, WorkDir: dir, RunsDir: filepath.Join(dir, "runs"), Log: discard,
		Load: flows.Options{Disk: osdisk.OS, UserAgentDirs: []string{}}, Host: runner.Host{Commands: cmds}}
	if edit != nil {
		edit(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	past, err := s.boot(context.Background(), filepath.Join(flowDir, ".flow"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.runs.shutdown()
		_ = s.state.close()
	})
	return &booted{Server: s, cmds: cmds, dir: dir, past: past}
}

// records reads serve.jsonl.
func (b *booted) records(t *testing.T) []Record {
	t.Helper()
	l, recs, err := openState(filepath.Join(b.cfg.Dir, ".flow", "serve.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	_ = l.close()
	return recs
}

func count(recs []Record, typ RecordType, flow string) int {
	n := 0
	for _, r := range recs {
		if r.Type == typ && (flow == "" || r.Flow == flow) {
			n++
		}
	}
	return n
}
