package runner

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/internal/secret"
)

// A run of the runner's Local backend redacts the secrets the process
// learned, though its options name none: the caller gives input only.
func TestRunnerGivesEveryRunTheProcessSecrets(t *testing.T) {
	const key = "sk-runner-learned-0123456789abcdef"
	t.Setenv("RUNNER_PLAIN_VALUE", key)
	r, err := New(Config{Secrets: func() *secret.Redactor { return secret.New(key) }})
	if err != nil {
		t.Fatal(err)
	}
	plan, dir := load(t, "name: f\nnodes:\n  - {id: hi, run: 'echo \"$RUNNER_PLAIN_VALUE\"'}\n")
	var opts engine.Options
	var cfg Host
	cfg.WorkDir, cfg.RunsDir = dir, filepath.Join(dir, "runs")
	res, err := r.Local().Start(context.Background(), plan, cfg, opts)
	if err != nil || !res.OK {
		t.Fatalf("start: %+v, %v", res, err)
	}
	_ = filepath.WalkDir(res.Dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(path); bytes.Contains(b, []byte(key)) {
				t.Errorf("the key is in %s", path)
			}
		}
		return nil
	})
}
