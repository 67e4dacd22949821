package flows_test

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/flows/osdisk"
	"github.com/flowrun/flow/schema"
)

// evalSpellings are run: scripts holding ${{ input.v }} (written V here):
// refused ones hand the value to a command that runs it as code, by any
// spelling (wrappers, paths, options, stdin, pipes, the list form); the
// others give it to a command as data and must stay accepted. Issue 23
// listed the first dozen as holes on main.
var evalSpellings = []struct {
	script string
	refuse bool
}{
	// The spellings of issue 23.
	{`/bin/bash -c "echo V"`, true},
	{`bash -lc "echo V"`, true},
	{`timeout 5 bash -c "echo V"`, true},
	{`env bash -c "echo V"`, true},
	{`nice bash -c "echo V"`, true},
	{`exec bash -c "echo V"`, true},
	{`command bash -c "echo V"`, true},
	{`nohup sh -c "echo V"`, true},
	{`command eval "echo V"`, true},
	{`builtin eval "echo V"`, true},
	{`trap 'echo V' EXIT`, true},
	{`find . -exec sh -c "echo V" \;`, true},
	{`source <(echo "V")`, true},
	{`. /dev/stdin <<< "V"`, true},
	{`[bash, -c, "echo V"]`, true},
	// More wrappers, paths and option spellings.
	{`/usr/bin/env bash -c "echo V"`, true},
	{`env -i PATH=/usr/bin bash -c "echo V"`, true},
	{`env -u HOME -- sh -c "echo V"`, true},
	{`env - PATH=/bin bash -c "echo V"`, true},
	{`echo "V" | while read -r l; do eval "$l"; done`, true},
	{`while read -r l; do bash -c "$l"; done <<< "V"`, true},
	{`echo "V" | { read -r l; source /dev/fd/3 3<<< "$l"; }`, true},
	{`echo "V" | grep x | sh`, true},
	{`python3 script.py <<< "V"`, false},
	{`echo "V" | while read -r l; do echo "$l"; done`, false},
	{`coproc bash -c "echo V"`, true},
	{`{ echo "V"; } | bash -s`, true},
	{`cat <<EOF | sh` + "\nV\nEOF", true},
	{`bash <(echo "V")`, true},
	{`nice -n "V" ls`, true},
	{`command -v "V"`, true},
	{`nice -n 10 timeout -s KILL 5 bash -c "echo V"`, true},
	{`stdbuf -o L sh -c "echo V"`, true},
	{`setsid -w dash -ec "echo V"`, true},
	{`time zsh -c "echo V"`, true},
	{`exec -a x /usr/local/bin/bash -xc "echo V"`, true},
	{`\bash -c "echo V"`, true},
	{`'bash' -c "echo V"`, true},
	{`bash -o pipefail -c "echo V"`, true},
	{`bash -c -- "echo V"`, true},
	{`bash "V"`, true},
	{`bash -c "$(printf '%s' "V")"`, true},
	{`sh <<EOF` + "\nV\nEOF", true},
	{`. /dev/stdin <<EOF` + "\necho V\nEOF", true},
	{`source /proc/self/fd/0 <<< "V"`, true},
	{`chroot / bash -c "V"`, true},
	{`time bash -c "V"`, true},
	{`bash < <(echo "V")`, true},
	{`echo "V" | bash`, true},
	{`printf '%s' "V" | env sh -s`, true},
	{`echo "V" | xargs sh -c`, true},
	{`echo "V" | xargs -I{} bash -c '{}'`, true},
	{`xargs -a "V" echo`, true},
	{`find . -execdir /bin/sh -c "V" +`, true},
	{`find . -ok env bash -c "V" \;`, true},
	{`eval "V"`, true},
	{`eval "$(echo "V")"`, true},
	{`source "V"`, true},
	{`. "V"`, true},
	{`trap "V" INT`, true},
	{`python3 -c "print('V')"`, true},
	{`python -c "V"`, true},
	{`/usr/bin/python3.12 -Bc "V"`, true},
	{`python3 -m "V"`, true},
	{`python3 "V"`, true},
	{`echo "V" | python3`, true},
	{`perl -e "print 'V'"`, true},
	{`perl script.pl "V"`, true},
	{`ruby -e "puts 'V'"`, true},
	{`node -e "console.log('V')"`, true},
	{`php -r "echo 'V';"`, true},
	{`lua -e "print('V')"`, true},
	{`awk "BEGIN { print \"V\" }"`, true},
	{`sed "s/a/V/" file`, true},
	{`su -c "echo V"`, true},
	{`sudo echo "V"`, true},
	{`ssh host "echo V"`, true},
	{`watch "echo V"`, true},
	{`parallel echo ::: "V"`, true},
	{`env -S "echo V"`, true},
	{`env "V"`, true},
	{`timeout "V" ls`, true},
	{`"V" arg`, true},
	{`$(echo "V")`, true},
	{`$SHELL -c "echo V"`, true},
	{`git -c "core.pager=V" log`, true},
	{`git "V" log`, true},
	{`git -C dir -c "alias.x=V" x`, true},
	{`git -C dir log --author="V"`, false},
	{`alias x="V"`, true},
	{`PS4="V" bash -x script.sh`, true},
	{`export LD_PRELOAD="V"`, true},
	{`export "V"`, true},
	{`builtin read "V"`, true},
	{`[env, bash, -c, "V"]`, true},
	{`[/usr/bin/env, -i, sh, -ec, "V"]`, true},
	{`[timeout, "5", python3, -c, "V"]`, true},
	{`[find, ., -exec, sh, -c, "V", ";"]`, true},
	{`["V"]`, true},
	// A value after a bash -c script is its positional parameter: judged
	// where the script puts it.
	{`bash -c 'eval "$1"' _ "V"`, true},
	{`bash -c 'echo $(( $1 + 1 ))' _ "V"`, true},
	{`sh -c '"$@"' _ "V"`, true},
	{`bash -c 'bash -c "$1"' _ "V"`, true},
	{`bash -c 'echo ${!1}' _ "V"`, true},
	{`bash -c "$SCRIPT" _ "V"`, true},
	{`bash -c 'echo "unclosed' _ "V"`, true},
	{`[bash, -c, 'eval "$1"', _, "V"]`, true},
	{`bash -c 'printf "%s" "$@"; grep -e "$1" f' _ "V"`, false},
	{`bash -c 'bash -c "echo \"\$1\"" _ "$1"' _ "V"`, false},
	// A value moved into a variable is still the value (issue 34).
	{`X="V"; eval "$X"`, true},
	{`f="V"; sh -c "$f"`, true},
	{`f="V"; bash -c "$f"`, true},
	{`f="V"; docker run --rm alpine sh -c "$f"`, true},
	{`X="V"; Y="pre $X"; eval "$Y"`, true},
	{`X=$(printf '%s' "V"); eval "$X"`, true},
	{`export X="V"; source "$X"`, true},
	{`local X="V"; . "$X"`, true},
	{`for f in "V"; do eval "$f"; done`, true},
	{`read -r X <<< "V"; bash -c "$X"`, true},
	{`X="V"; echo "$X" | sh`, true},
	{`X="V"; echo "$X" | xargs sh -c`, true},
	{`X="V"; $X`, true},
	{`X="V"; echo ${!X}`, true},
	{`X="V"; echo $(( X + $X ))`, true},
	{`X="V"; env -S "$X"`, true},
	{`A=("V"); eval "${A[0]}"`, true},
	{`X="V"; eval 'echo "$X"'`, false},
	{`X="V"; echo "$X"; printf '%s\n' "$X" | grep -e x`, false},
	{`X="V"; bash -c 'printf "%s" "$1"' _ "$X"`, false},
	{`X="V"; Y="$X"; cat "$Y"`, false},
	{`X="V"; echo ${#X} "${X:-none}"`, false},
	{`X="V"; echo "$(printf '%s' "$X")"`, false},
	{`X=V; eval "$Y"`, false},
	{`X="V"; docker run --rm -e X="$X" alpine printenv X`, false},
	{`docker run --rm alpine echo "V"`, false},
	// Containers and other launchers run the command after their own
	// options.
	{`docker run --rm -v "$PWD:/w" alpine sh -c "echo V"`, true},
	{`podman exec -it box bash -c "V"`, true},
	{`kubectl exec pod -- sh -c "V"`, true},
	{`echo "V" | docker run -i --rm alpine sh`, true},
	// Values as data: these stay accepted.
	{`echo V`, false},
	{`echo "V"`, false},
	{`printf '%s\n' "V"`, false},
	{`grep -e "V" file`, false},
	{`cat "V"`, false},
	{`git commit -m "V"`, false},
	{`git log --grep="V"`, false},
	{`bash -c 'printf "%s" "$1"' _ "V"`, false},
	{`timeout 5 bash -c 'echo "$1"' _ "V"`, false},
	{`bash script.sh "V"`, false},
	{`python3 script.py "V"`, false},
	{`python3 -c 'import sys; print(sys.argv[1])' "V"`, false},
	{`find . -name "V" -print`, false},
	{`find . -exec grep -e "V" {} \;`, false},
	{`env FOO="V" ./tool`, false},
	{`FOO="V" ./tool`, false},
	{`X="V"; echo "$X"`, false},
	{`nice -n 5 echo "V"`, false},
	{`timeout 5 cat "V"`, false},
	{`cat <<EOF` + "\nV\nEOF", false},
	{`cat <<< "V"`, false},
	{`echo "V" | grep x`, false},
	{`echo "V" | xargs echo`, false},
	{`jq -n --arg v "V" '$v'`, false},
	{`wc -l "V"`, false},
	{`echo "V" > out.txt`, false},
	{`test "V" = yes`, false},
	{`[echo, "V"]`, false},
	{`[git, commit, -m, "V"]`, false},
	{`[bash, -c, 'echo "$1"', _, "V"]`, false},
	{`[env, "FOO=V", ./tool]`, false},
	{`curl -d "V" http://127.0.0.1/`, false},
}

func evalFlow(script string) []byte {
	script = strings.ReplaceAll(script, "V", "${{ input.v }}")
	var run string
	if strings.HasPrefix(script, "[") {
		run = "    run: " + script + "\n"
	} else {
		run = "    run: |\n"
		for _, l := range strings.Split(script, "\n") {
			run += "      " + l + "\n"
		}
	}
	return []byte("name: spell\ninput: {v: string}\nnodes:\n  - id: s\n" + run)
}

// TestEvaluatorSpellings: a value reaches a known evaluator by no spelling;
// a command that takes it as data keeps it. Every refusal is the shell code
// at the ${{ }}, with a hint that says how to pass the value instead.
func TestEvaluatorSpellings(t *testing.T) {
	refused := 0
	for i, c := range evalSpellings {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			_, diags := flows.LoadSource("spell.yaml", evalFlow(c.script), flows.Options{Disk: osdisk.OS, UserAgentDirs: []string{}})
			var shell []string
			for _, d := range diags {
				if d.Code != schema.CodeShell {
					t.Errorf("%s: unexpected %s", c.script, d)
					continue
				}
				if !strings.Contains(d.Detail, "env:") {
					t.Errorf("%s: hint %q does not say env:", c.script, d.Detail)
				}
				shell = append(shell, fmt.Sprint(d))
			}
			switch {
			case c.refuse && len(shell) == 0:
				t.Errorf("%s: accepted; a value would run as code", c.script)
			case !c.refuse && len(shell) > 0:
				t.Errorf("%s: refused, but the value is data:\n%s", c.script, strings.Join(shell, "\n"))
			}
		})
		if c.refuse {
			refused++
		}
	}
	if refused < 40 {
		t.Errorf("%d refused spellings, want at least 40", refused)
	}
}

// TestTaintIsLinear: a value passed along a long chain of variables,
// written in the order that makes each step wait for the next line, is
// followed to the eval at the end, and the load stays fast.
func TestTaintIsLinear(t *testing.T) {
	const n = 10_000
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "A%d=\"$A%d\"\n", i, i+1)
	}
	fmt.Fprintf(&b, "A%d=\"${{ input.v }}\"\neval \"$A0\"\n", n)
	var src strings.Builder
	src.WriteString("name: chain\ninput: {v: string}\nnodes:\n  - id: s\n    run: |\n")
	for _, l := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		src.WriteString("      " + l + "\n")
	}
	// The loading thread's CPU time, not the wall clock: a busy machine
	// does not make it longer.
	runtime.LockOSThread()
	start := loadingCPU(t)
	_, diags := flows.LoadSource("chain.yaml", []byte(src.String()), flows.Options{Disk: osdisk.OS, UserAgentDirs: []string{}})
	took := loadingCPU(t) - start
	runtime.UnlockOSThread()
	t.Logf("%d assignments loaded in %v of CPU", n, took)
	if took > 10*time.Second { // a quadratic walk takes minutes
		t.Errorf("%d assignments took %v", n, took)
	}
	if len(diags) != 1 || diags[0].Code != schema.CodeShell || !strings.Contains(diags[0].Summary, "$A0 at line 10002") {
		t.Errorf("diagnostics: %v", diags)
	}
}

// loadingCPU is the CPU time of the calling thread (locked to it).
func loadingCPU(t *testing.T) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		t.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
