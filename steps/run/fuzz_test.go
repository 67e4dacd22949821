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
	"github.com/flowrun/flow/engine/local"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/flows/osdisk"
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
	`[echo, "V"]`, `[bash, -c, 'echo "$1"', _, "V"]`, `[bash, -c, "echo V"]`, `[env, sh, -c, "V"]`,
	`bash -c 'eval "$1"' _ V`, `bash -c 'echo $(( $1 ))' _ V`, `sh -c 'printf "%s" "$@"' _ V`,
}

// hostileRunValues each write the file named by %s (through a shell
// redirection, as no program but the few on the fuzz PATH exists) if a
// shell ever runs them as code.
var hostileRunValues = []string{
	"x;:>%s;", "$(:>%s)", "`:>%s`", `";:>%s;"`, `';:>%s;'`, "\n:>%s\n", "a[$(:>%s)]", "EOF\n:>%s\nEOF",
	")\n:>%s\ncase x in (", "-c :>%s", ":>%s", "&& :>%s", "| :>%s", "'\"$(:>%s)\"'", "$'\\n':>%s", "1+a[$(:>%s)]",
}

// FuzzRunScript holds the shell rule to its promise: any run: script (a
// string, or a list when it starts with [) that validates, run by the real
// run step (bash) with a value that would write a marker file if run as
// code (the fuzzer picks which), never writes it. The script runs in a
// temporary directory with a PATH of a few harmless programs, so that a
// mutated script does little beyond it.
func FuzzRunScript(f *testing.F) {
	for i, s := range runSeeds {
		f.Add(s, uint8(i))
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
	f.Fuzz(func(t *testing.T, script string, which uint8) {
		if !strings.Contains(script, "V") || strings.Contains(script, "${{") || strings.Contains(script, "FLOW_EXPR") || len(script) > 2000 {
			return
		}
		script = strings.ReplaceAll(script, "V", "${{ input.v }}")
		var src strings.Builder
		src.WriteString("name: fuzz\ninput: {v: string}\nnodes:\n  - id: s\n    timeout: 5s\n")
		if strings.HasPrefix(script, "[") {
			src.WriteString("    run: " + script + "\n")
		} else {
			src.WriteString("    run: |\n")
			for _, l := range strings.Split(script, "\n") {
				src.WriteString("      " + l + "\n")
			}
		}
		dir := t.TempDir()
		plan, diags := flows.LoadSource(filepath.Join(dir, "fuzz.yaml"), []byte(src.String()), flows.Options{Disk: osdisk.OS, UserAgentDirs: []string{}, WorkDir: dir})
		if plan == nil || diags.HasErrors() {
			return
		}
		nonce := make([]byte, 6)
		_, _ = rand.Read(nonce)
		marker := "pwned" + hex.EncodeToString(nonce)
		value := strings.ReplaceAll(hostileRunValues[int(which)%len(hostileRunValues)], "%s", marker)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = local.Execute(ctx, plan, local.Config{Commands: cmds, RunsDir: filepath.Join(dir, "runs"), WorkDir: dir}, engine.Options{Input: map[string]any{"v": value}})
		if _, err := os.Stat(filepath.Join(dir, marker)); err == nil {
			t.Fatalf("the value %q ran as code in a script that validates:\n%s", value, script)
		}
	})
}
