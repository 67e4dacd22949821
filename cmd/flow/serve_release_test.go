package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeReleaseShowsItsNotes: the release example's ask, served, shows
// the drafted notes it asks about (issue 37: it showed nothing to approve).
func TestServeReleaseShowsItsNotes(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFlows(t, dir, nil)
	if out, err := exec.Command("cp", "-a", filepath.Join(root, "examples", "release.yaml"), filepath.Join(root, "examples", "agents"), filepath.Join(dir, "flows")).CombinedOutput(); err != nil {
		t.Fatalf("copying the example: %v\n%s", err, out)
	}
	s := startServe(t, flowBinary(t), dir)
	if code, m := s.call("POST", "/api/flows/release/runs", `{"since": "2 days ago"}`); code != 202 {
		t.Fatalf("starting release: %d %v", code, m)
	}
	var ask map[string]any
	await(t, 30*time.Second, "the release's ask", func() bool {
		_, m := s.call("GET", "/api/asks", "")
		asks, _ := m["asks"].([]any)
		if len(asks) == 1 {
			ask = asks[0].(map[string]any)
		}
		return ask != nil
	})
	shown, _ := ask["shown"].([]any)
	if len(shown) != 1 || shown[0].(map[string]any)["node"] != "notes" || strings.TrimSpace(shown[0].(map[string]any)["text"].(string)) == "" {
		t.Fatalf("the ask shows %v, want the drafted notes", ask["shown"])
	}
	s.sigterm()
}
