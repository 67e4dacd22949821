package enginetest_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/enginetest"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/flows/osdisk"
)

// TestIsolatedScopesGoThroughTheWorkspace walks the isolated example on
// the in-memory host with an in-memory Workspace: no git anywhere, and yet
// each map item's scope is opened, checkpointed, landed in item order and
// removed, as the walker asks its Workspace, and the journal says so.
func TestIsolatedScopesGoThroughTheWorkspace(t *testing.T) {
	plan, diags := flows.Load(filepath.Join("..", "..", "examples", "writers.yaml"), flows.Options{Disk: osdisk.OS, WorkDir: filepath.Join("..", ".."), UserAgentDirs: []string{}, Drivers: []string{"exec", "pi", "claude", "codex", "openai"}})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	h, ws := enginetest.New(), &enginetest.Workspace{}
	h.Dir = t.TempDir()
	res, err := engine.Walk(context.Background(), plan, engine.Options{RunID: "r1"}, enginetest.WithWorkspace(h, ws), nil)
	if err != nil || !res.OK {
		t.Fatalf("walk: %v %+v", err, res)
	}
	var merges, lands []string
	for _, s := range ws.Steps() {
		if v, ok := strings.CutPrefix(s, "merge "); ok {
			merges = append(merges, v)
		}
	}
	for _, f := range h.Facts() {
		if f.Type == "land" {
			lands = append(lands, f.Visit+" "+string(f.Worktree.Land))
		}
	}
	items := []string{"write[1]", "write[2]", "write[3]"}
	if !slices.Equal(merges, items) {
		t.Errorf("merged %q, want the items in order %q (steps %q)", merges, items, ws.Steps())
	}
	if want := []string{"write[1] landed", "write[2] landed", "write[3] landed"}; !slices.Equal(lands, want) {
		t.Errorf("land facts %q, want %q", lands, want)
	}
	for _, step := range []string{"open ", "make flow/r1.write[1]", "checkpoint write[1]/note", "remove flow/r1.write[3]"} {
		if !slices.ContainsFunc(ws.Steps(), func(s string) bool { return strings.HasPrefix(s, step) }) {
			t.Errorf("no step %q in %q", step, ws.Steps())
		}
	}
}

// TestAConflictingLandingFailsTheScope makes the second item's landing
// conflict: its visit fails `conflict`, its worktree is kept, and the
// items either side land.
func TestAConflictingLandingFailsTheScope(t *testing.T) {
	plan, diags := flows.Load(filepath.Join("..", "..", "examples", "writers.yaml"), flows.Options{Disk: osdisk.OS, WorkDir: filepath.Join("..", ".."), UserAgentDirs: []string{}, Drivers: []string{"exec", "pi", "claude", "codex", "openai"}})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	h, ws := enginetest.New(), &enginetest.Workspace{Conflicts: func(visit string) bool { return visit == "write[2]" }}
	h.Dir = t.TempDir()
	res, err := engine.Walk(context.Background(), plan, engine.Options{RunID: "r1"}, enginetest.WithWorkspace(h, ws), nil)
	if err != nil || res.OK {
		t.Fatalf("walk: %v, ok %v; want a failed run", err, res.OK)
	}
	if f := res.Failure.Root(); f.Kind != "conflict" || f.Visit != "write[2]" {
		t.Errorf("failure %v, want write[2]'s conflict", f)
	}
	var lands []string
	for _, f := range h.Facts() {
		if f.Type == "land" {
			lands = append(lands, f.Visit+" "+string(f.Worktree.Land))
		}
	}
	if want := []string{"write[1] landed", "write[2] conflict", "write[3] landed"}; !slices.Equal(lands, want) {
		t.Errorf("land facts %q, want %q", lands, want)
	}
	for _, s := range ws.Steps() {
		if s == "remove flow/r1.write[2]" {
			t.Errorf("the conflicting scope's worktree was removed: %q", ws.Steps())
		}
	}
}
