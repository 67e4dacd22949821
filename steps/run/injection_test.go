package run_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/local"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/flows/osdisk"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/steps/exec"
	"github.com/flowrun/flow/steps/run"
)

// hostileValues are values an attacker would put in an input or make a
// model answer: each would run `touch pwned…` if it were pasted into a
// script, and each must reach the script as data.
var hostileValues = []string{
	"x; touch pwned1",
	"$(touch pwned2)",
	"`touch pwned3`",
	`"; touch pwned4; echo "`,
	`'; touch pwned5; echo '`,
	"a\ntouch pwned6\n",
	"${IFS}touch${IFS}pwned7",
	"' \"$(touch pwned8)\" '",
	"*",
	"-n",
	"$HOME \\ \\\\ %s",
	"EOF\ntouch pwned9\nEOF",
	")\ntouch pwned10\ncase x in (",
}

// scriptContexts are the places a ${{ }} may stand in a run: string, each
// with what the script prints for a value v.
var scriptContexts = []struct {
	id, script string
	want       func(v string) string
}{
	{"bare", `printf '%s' ${{ V }}`, same},
	{"word", `printf '%s' file-${{ V }}.txt`, func(v string) string { return "file-" + v + ".txt" }},
	{"double", `printf '%s' "pre ${{ V }} post"`, around},
	{"single", `printf '%s' 'pre ${{ V }} post'`, around},
	{"ansi", `printf '%s' $'pre ${{ V }} post'`, around},
	{"heredoc", "cat <<EOF\npre ${{ V }} post\nEOF", func(v string) string { return around(v) + "\n" }},
	{"dash_heredoc", "cat <<-EOF\n\tpre ${{ V }} post\n\tEOF", func(v string) string { return around(v) + "\n" }},
	{"subst", `printf '%s' "$(printf '%s' ${{ V }})"`, func(v string) string { return strings.TrimRight(v, "\n") }},
	{"herestring", `cat <<< ${{ V }}`, func(v string) string { return v + "\n" }},
	{"case", "case ${{ V }} in ${{ V }}) printf same;; *) printf differ;; esac", func(string) string { return "same" }},
	{"assign", `X=${{ V }}; printf '%s' "$X"`, same},
	{"default", `printf '%s|%s' ${UNSET:-${{ V }}} "${UNSET:-${{ V }}}"`, func(v string) string { return v + "|" + v }},
	{"twice", `printf '%s' ${{ V }}${{ V }}`, func(v string) string { return v + v }},
	{"comment", "# ${{ V }}\nprintf done", func(string) string { return "done" }},
	{"positional", `bash -c 'printf "%s" "$1"' _ ${{ V }}`, same},
}

func same(v string) string   { return v }
func around(v string) string { return "pre " + v + " post" }

// contextFlow is a flow whose run nodes print value in every context;
// value is an expression (input.v, or a node's output).
func contextFlow(name, before, value string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\ninput: {v: string}\nnodes:\n%s", name, before)
	for _, c := range scriptContexts {
		script := strings.ReplaceAll(c.script, "${{ V }}", "${{ "+value+" }}")
		fmt.Fprintf(&b, "  - id: %s\n    run: |\n", c.id)
		for _, line := range strings.Split(script, "\n") {
			fmt.Fprintf(&b, "      %s\n", line)
		}
	}
	return b.String()
}

// runContexts runs a flow through the engine with the real Commander (and
// the exec driver) and checks every context printed the value as data.
func runContexts(t *testing.T, src, v string, input any) {
	t.Helper()
	dir := t.TempDir()
	plan, diags := flows.LoadSource(filepath.Join(dir, "hostile.yaml"), []byte(src), flows.Options{Disk: osdisk.OS, UserAgentDirs: []string{}, WorkDir: dir})
	if diags.HasErrors() {
		t.Fatalf("load:\n%s\n%s", diags.Error(), src)
	}
	cfg := local.Config{Commands: run.New(), Drivers: map[string]engine.Driver{"exec": exec.New(exec.Options{})}, RunsDir: filepath.Join(dir, "runs"), WorkDir: dir}
	opts := engine.Options{Input: input}
	res, err := local.Execute(context.Background(), plan, cfg, opts)
	if err != nil {
		t.Fatalf("execute: %v", err)
	}
	if !res.OK {
		t.Fatalf("run failed: %v", res.Failure)
	}
	outputs := reports(t, res.Dir)
	for _, c := range scriptContexts {
		if got, want := outputs[c.id], c.want(v); got != want {
			t.Errorf("%s: printed %q, want %q", c.id, got, want)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "pwned") {
			t.Errorf("%s exists: a value ran as shell code", e.Name())
		}
	}
}

// TestInputValuesAreData is the acceptance test for shell injection through
// an input: every hostile value reaches every context of a run: string as
// data, and nothing it holds runs.
func TestInputValuesAreData(t *testing.T) {
	for i, v := range hostileValues {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			runContexts(t, contextFlow("hostile", "", "input.v"), v, map[string]any{"v": v})
		})
	}
}

// TestAnswersAreData: an agent's answer (an exec agent that prints the
// hostile value, as a prompt-injected model would) reaches run: strings as
// data too.
func TestAnswersAreData(t *testing.T) {
	for i, v := range hostileValues {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			dir := t.TempDir()
			answer := filepath.Join(dir, "answer.txt")
			if err := os.WriteFile(answer, []byte(v), 0o644); err != nil {
				t.Fatal(err)
			}
			agent := fmt.Sprintf("  - id: model\n    agent: {name: model, description: answers, driver: exec, command: [cat, %q]}\n    prompt: answer\n", answer)
			// The exec driver drops the answer's final line break.
			runContexts(t, contextFlow("hostile", agent, "model.output"), strings.TrimRight(v, "\r\n"), map[string]any{"v": ""})
		})
	}
}

// reports reads the report of every run visit that ended, by visit path.
func reports(t *testing.T, dir string) map[string]string {
	t.Helper()
	facts, err := rundir.ReadJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range facts {
		if m, ok := f.Output.(map[string]any); ok && f.Type == record.FactEnd {
			if r, ok := m["report"].(string); ok {
				out[f.Visit] = r
			}
		}
	}
	return out
}
