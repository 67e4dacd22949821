package enginetest_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/enginetest"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/flows/osdisk"
)

// walk loads an example and walks it on a fresh in-memory host.
func walk(t *testing.T, file string) (*enginetest.Host, *engine.Result, error) {
	t.Helper()
	plan, diags := flows.Load(file, flows.Options{Disk: osdisk.OS, WorkDir: filepath.Join("..", ".."), UserAgentDirs: []string{}, Drivers: []string{"exec", "pi", "claude", "codex", "openai"}})
	if diags.HasErrors() {
		t.Fatalf("%s does not load:\n%s", file, diags.Error())
	}
	h := enginetest.New()
	h.Dir = t.TempDir()
	res, err := engine.Walk(context.Background(), plan, engine.Options{RunID: "r1"}, h, nil)
	return h, res, err
}

// TestEveryExampleWalksInMemory walks every example on the in-memory host,
// its answers scripted, twice: each run ends well, every visit that started
// ended, and the second walk records the same visits with the same
// outcomes and leaves the same values. An example whose scopes need
// working copies is refused, before anything runs, as on any host without
// a workspace.
func TestEveryExampleWalksInMemory(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "examples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			h, res, err := walk(t, file)
			if filepath.Base(file) == "writers.yaml" {
				var re *engine.RefusedError
				if !errors.As(err, &re) || !strings.Contains(err.Error(), "isolation") {
					t.Fatalf("an isolated example on a host without a workspace: got %v, want a refusal naming isolation", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !res.OK {
				t.Fatalf("the run failed: %+v", res.Failure)
			}
			started, ended := map[string]bool{}, map[string]bool{}
			for _, f := range h.Facts() {
				switch f.Type {
				case "start":
					started[f.Visit] = true
				case "end":
					ended[f.Visit] = true
				}
			}
			if len(started) == 0 {
				t.Fatal("no visit started")
			}
			for v := range started {
				if !ended[v] {
					t.Errorf("%s started and never ended", v)
				}
			}
			again, res2, err := walk(t, file)
			if err != nil || !res2.OK {
				t.Fatalf("the second walk: %v %+v", err, res2)
			}
			if a, b := outcomes(t, h), outcomes(t, again); a != b {
				t.Errorf("two walks differ:\n%s\n%s", a, b)
			}
			if !reflect.DeepEqual(h.Values(), again.Values()) {
				t.Errorf("two walks leave different values:\n%v\n%v", h.Values(), again.Values())
			}
		})
	}
}

// outcomes is the visits' ends in journal order, with their outputs.
func outcomes(t *testing.T, h *enginetest.Host) string {
	var b strings.Builder
	for _, f := range h.Facts() {
		if f.Type != "end" {
			continue
		}
		out, err := json.Marshal(f.Output)
		if err != nil {
			t.Fatal(err)
		}
		ok := f.OK != nil && *f.OK
		b.WriteString(f.Visit + " " + string(out) + " " + map[bool]string{true: "ok", false: "failed"}[ok] + "\n")
	}
	return b.String()
}
