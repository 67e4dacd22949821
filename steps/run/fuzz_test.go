package run_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/steps/run"
)

// runSeeds are run: scripts, with V where a ${{ input.v }} stands: the
// places a value is data, and the spellings that hand it to an evaluator
// (refused at validate, so the fuzzer mutates from both sides of the rule).
var runSeeds = []string{
	`echo V`, `printf '%s' "V"`, `printf '%s' 'V'`, `printf '%s' $'V'`, "cat <<EOF\nV\nEOF",
	`cat <<< V`, `X=V; echo "$X"`, `echo ${UNSET:-V}`, "# V\necho done", `case V in V) echo same;; esac`,
	`bash -c 'printf "%s" "$1"' _ V`, `timeout 5 bash -c 'echo "$1"' _ V`, `env X=V bash -c 'echo "$X"'`,
	`echo "V" | grep -e x`, `echo "V" | xargs echo`, `find . -maxdepth 0 -exec echo V {} \;`,
	`bash -c "echo V"`, `/bin/bash -c "echo V"`, `bash -lc "echo V"`, `timeout 5 bash -c "echo V"`,
	`env bash -c "echo V"`, `nice bash -c "echo V"`, `exec bash -c "echo V"`, `command bash -c "echo V"`,
	`nohup sh -c "echo V"`, `command eval "echo V"`, `builtin eval "echo V"`, `trap 'echo V' EXIT`,
	`find . -maxdepth 0 -exec sh -c "echo V" \;`, `source <(echo "V")`, `. /dev/stdin <<< "V"`,
	`echo "V" | bash`, `echo "V" | xargs sh -c`, `echo $(( V + 1 ))`, `[[ V -gt 1 ]]`, `read V`,
	`declare "V"`, `PS4=V; set -x; echo`, `sh <<EOF` + "\nV\nEOF", `bash -c "$(echo V)"`,
}

// hostileRunValues each write the file named by %s (through a shell
// redirection, as no program but the few on the fuzz PATH exists) if a
// shell ever runs them as code.
var hostileRunValues = []string{
	"x;:>%s;", "$(:>%s)", "`:>%s`", `";:>%s;"`, `';:>%s;'`, "\n:>%s\n", "a[$(:>%s)]", "EOF\n:>%s\nEOF",
	")\n:>%s\ncase x in (", "-c :>%s", ":>%s", "&& :>%s", "| :>%s", "'\"$(:>%s)\"'", "$'\\n':>%s", "1+a[$(:>%s)]",
}

// FuzzRunScript holds the shell rule to its promise: any run: script that
// validates, run by the real run step (bash) with values that would write a
// marker file if run as code, never writes it. The script runs in a
// temporary directory with a PATH of a few harmless programs, so that a
// mutated script does little beyond it.
func FuzzRunScript(f *testing.F) {
	for _, s := range runSeeds {
		f.Add(s)
	}
	bin := f.TempDir()
	for _, p := range []string{"bash", "sh", "env", "timeout", "nice", "printf", "echo", "cat", "grep", "true", "false", "test", "xargs", "wc", "tr", "head", "find", "nohup"} {
		path, err := exec.LookPath(p)
		if err != nil {
			continue
		}
		if err := os.Symlink(path, filepath.Join(bin, p)); err != nil {
			f.Fatal(err)
		}
	}
	f.Setenv("PATH", bin)
	cmds := run.New()
	f.Fuzz(func(t *testing.T, script string) {
		if !strings.Contains(script, "V") || strings.Contains(script, "${{") || strings.Contains(script, "FLOW_EXPR") || len(script) > 2000 {
			return
		}
		script = strings.ReplaceAll(script, "V", "${{ input.v }}")
		var src strings.Builder
		src.WriteString("name: fuzz\ninput: {v: string}\nnodes:\n  - id: s\n    timeout: 5s\n    run: |\n")
		for _, l := range strings.Split(script, "\n") {
			src.WriteString("      " + l + "\n")
		}
		dir := t.TempDir()
		plan, diags := flows.LoadSource(filepath.Join(dir, "fuzz.yaml"), []byte(src.String()), flows.Options{UserAgentDirs: []string{}, WorkDir: dir})
		if plan == nil || diags.HasErrors() {
			return
		}
		nonce := make([]byte, 6)
		_, _ = rand.Read(nonce)
		marker := "pwned" + hex.EncodeToString(nonce)
		for _, v := range hostileRunValues {
			value := strings.ReplaceAll(v, "%s", marker)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, _ = engine.Execute(ctx, plan, engine.Options{Commands: cmds, RunsDir: filepath.Join(dir, "runs"),
				WorkDir: dir, Input: map[string]any{"v": value}})
			cancel()
			if _, err := os.Stat(filepath.Join(dir, marker)); err == nil {
				t.Fatalf("the value %q ran as code in a script that validates:\n%s", value, script)
			}
		}
	})
}
