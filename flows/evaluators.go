package flows

import (
	"fmt"
	"path"
	"regexp"
	"strings"
	"sync"
)

// A value is data only where the script's own parse shows a command that
// takes it as an argument and does not evaluate it (docs/flow-files.md,
// "Values in scripts"). This file is the half of that rule that reads a
// command line: it unwraps the commands that run another command (env,
// timeout, nice, exec, …), and says for each argument holding a ${{ }}
// whether the command it reaches runs it as code. Shells and interpreters,
// eval, source, trap, sudo, ssh and the like are known evaluators: they do
// not get a value in their code, options or standard input, whatever the
// spelling. Any other command gets the value as data.

// word is one argument of a command line as the loader sees it before the
// script runs.
type word struct {
	text   string // the word, when known; else the text written before its first expansion
	known  bool   // text is the whole word: no expansion and no ${{ }} in it
	value  bool   // a ${{ }} stands in the word, or in anything it holds
	prefix bool   // the word starts with text (a NAME= prefix is told from it)
}

// verdict says, for each argument of a command line, why a value cannot
// stand there ("" when it is data), and whether the command runs what it
// reads on its standard input as code (why, or "").
type verdict struct {
	why    []string
	stdin  string
	runs   string // the evaluator the command line reaches, if any
	nested int    // how many bash -c scripts deep the command line stands
}

const (
	hintEval    = "pass the value in env: and have the code read it from its environment (\"$NAME\" in a shell, os.environ in Python, process.env in Node)"
	hintShellC  = "pass it in env: and refer to it as \"$NAME\" in the script, or as an argument after the script: bash -c 'echo \"$1\"' _ \"${{ … }}\""
	maxUnwrap   = 16
	reasonWrap  = "this ${{ }} is an argument of %s before the command it runs, where it could become an option or the command itself"
	reasonName  = "this ${{ }} would name the command to run"
	reasonDyn   = "the command here is not written out (it is expanded when the script runs), so flow cannot tell whether it runs this ${{ }} as code"
	reasonCode  = "this ${{ }} is an argument of %s, which runs it as code"
	reasonShell = "this ${{ }} is in the script of %s, which runs it as shell code"
)

// shells take their code after -c (or a combined -lc, -ec…), else read it
// from the file named by their first argument, else from standard input.
// The options listed take an operand.
var shells = map[string][]string{
	"bash": {"-o", "+o", "-O", "+O", "--rcfile", "--init-file"}, "sh": {"-o", "+o"}, "dash": {"-o", "+o"},
	"zsh": {"-o", "+o"}, "ksh": {"-o", "+o"}, "mksh": {"-o", "+o"}, "ash": {"-o", "+o"}, "yash": {"-o", "+o"},
	"posh": {"-o", "+o"}, "rbash": {"-o", "+o", "-O", "+O"}, "ksh93": {"-o", "+o"}, "fish": {"-C", "--init-command"},
	"csh": nil, "tcsh": nil,
}

// evaluators run their arguments (or some of them) as code, or hand them
// to a shell, and get no value at all. Those marked true may also run
// what they read on standard input.
var evaluators = map[string]bool{
	"eval": false, "trap": false, "alias": false, "bind": false, "complete": false, "compgen": false, "fc": false, "enable": false,
	"source": true, ".": true, "sudo": true, "doas": true, "su": true, "runuser": true, "pkexec": true, "ssh": true,
	"watch": false, "parallel": true, "script": true, "flock": false, "make": false, "gmake": false,
	"perl": true, "ruby": true, "irb": true, "node": true, "nodejs": true, "deno": true, "bun": true,
	"php": true, "lua": true, "luajit": true, "Rscript": true, "R": true, "julia": true, "tclsh": true, "wish": true,
	"osascript": true, "pwsh": true, "powershell": true, "expect": true, "gdb": true, "vim": true, "vi": true,
	"nvim": true, "ex": true, "emacs": true, "at": true, "batch": true, "crontab": true, "tmux": true, "screen": true,
	"systemd-run": true, "awk": true, "gawk": true, "mawk": true, "nawk": true, "sed": false, "gsed": false,
	"busybox": true, "toybox": true, "xonsh": true, "elvish": true, "nu": true, "guile": true, "sbcl": true,
}

// wrappers run the command that follows their own options (and, for some,
// positional operands): takes lists the options that take an operand,
// operands how many words stand between the options and the command.
type wrapper struct {
	takes    []string
	operands int
}

var wrappers = map[string]wrapper{
	"env":     {takes: []string{"-u", "--unset", "-C", "--chdir", "-S", "--split-string", "-P"}},
	"nice":    {takes: []string{"-n", "--adjustment"}},
	"timeout": {takes: []string{"-s", "--signal", "-k", "--kill-after"}, operands: 1},
	"nohup":   {}, "builtin": {}, "setsid": {}, "time": {}, "stdbuf": {takes: []string{"-i", "-o", "-e", "--input", "--output", "--error"}},
	"exec": {takes: []string{"-a"}}, "command": {}, "chroot": {takes: []string{"--userspec", "--groups"}, operands: 1},
	"ionice": {takes: []string{"-c", "-n", "--class", "--classdata"}}, "taskset": {operands: 1}, "chrt": {operands: 1},
	"unshare": {}, "caffeinate": {}, "unbuffer": {}, "torsocks": {}, "proxychains": {}, "catchsegv": {}, "strace": {takes: []string{"-o", "-e", "-p", "-s", "-u"}},
	"ltrace": {takes: []string{"-o", "-e", "-p", "-s", "-u"}}, "valgrind": {}, "prlimit": {}, "coproc": {},
}

// codeVariables are variables whose value bash, the dynamic loader or a
// common tool runs or loads as code: a value may not be assigned to them.
var codeVariables = map[string]bool{
	"PS0": true, "PS1": true, "PS2": true, "PS3": true, "PS4": true, "PROMPT_COMMAND": true, "BASH_ENV": true, "ENV": true,
	"PATH": true, "LD_PRELOAD": true, "LD_LIBRARY_PATH": true, "LD_AUDIT": true, "SHELLOPTS": true, "BASHOPTS": true,
	"PERL5OPT": true, "PERL5LIB": true, "PYTHONSTARTUP": true, "PYTHONPATH": true, "NODE_OPTIONS": true, "RUBYOPT": true,
	"GIT_SSH_COMMAND": true, "GIT_SSH": true, "GIT_EXTERNAL_DIFF": true, "GIT_PAGER": true, "GIT_EDITOR": true,
	"PAGER": true, "EDITOR": true, "VISUAL": true, "BROWSER": true, "GIT_CONFIG_PARAMETERS": true, "PROMPT_COMMAND_ARRAY": true,
}

var assignPrefix = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)(\[[^]]*\])?\+?=`) })

// commandName is how a command is known: its base name, without the path
// it was called by (/usr/bin/env, ./bash) or a version suffix (python3.12).
func commandName(s string) string {
	s = path.Base(s)
	for _, p := range []string{"python", "pypy", "perl", "ruby", "node", "php", "lua", "tclsh", "wish", "bash", "zsh"} {
		if strings.HasPrefix(s, p) && strings.Trim(s[len(p):], "0123456789.-") == "" {
			return p
		}
	}
	return s
}

// judge reads a command line.
func judge(ws []word) verdict { return judgeAt(ws, 0) }

// judgeAt reads a command line of a script nested bash -c nested deep.
func judgeAt(ws []word, nested int) verdict {
	v := verdict{why: make([]string, len(ws)), nested: nested}
	v.from(ws, 0, "", 0)
	return v
}

// refuse gives every value among ws[from:to] the reason why, unless it has
// one.
func (v *verdict) refuse(ws []word, from, to int, why string) {
	for i := max(from, 0); i < to && i < len(ws); i++ {
		if ws[i].value && v.why[i] == "" {
			v.why[i] = why
		}
	}
}

// from judges the command that starts at ws[pos], reached through the
// wrappers named in via.
func (v *verdict) from(ws []word, pos int, via string, depth int) {
	if pos >= len(ws) {
		return
	}
	name := ws[pos]
	switch {
	case name.value:
		v.refuse(ws, pos, pos+1, reasonName)
		v.refuse(ws, pos+1, len(ws), reasonDyn)
		return
	case !name.known:
		v.refuse(ws, pos+1, len(ws), reasonDyn)
		return
	case depth > maxUnwrap:
		v.refuse(ws, pos, len(ws), reasonDyn)
		return
	}
	cmd := commandName(name.text)
	shown := path.Base(name.text) + through(via)
	if w, ok := wrappers[cmd]; ok {
		next := v.wrapped(ws, pos, cmd, w)
		v.from(ws, next, join(via, cmd), depth+1)
		return
	}
	if isEvaluator(cmd) && cmd != "xargs" && cmd != "find" {
		v.runs = shown
	}
	if takes, ok := shells[cmd]; ok {
		v.shell(ws, pos, path.Base(name.text), via, takes)
		return
	}
	if cmd == "python" || cmd == "pypy" {
		v.python(ws, pos, shown)
		return
	}
	if stdin, ok := evaluators[cmd]; ok {
		v.refuse(ws, pos+1, len(ws), fmt.Sprintf(reasonCode, shown))
		if stdin && (cmd != "source" && cmd != "." || readsStdin(ws[pos+1:])) {
			v.stdin = shown
		}
		return
	}
	if launchers[cmd] {
		v.launcher(ws, pos, path.Base(name.text), via, depth)
		return
	}
	switch cmd {
	case "read", "unset", "mapfile", "readarray", "getopts", "declare", "typeset", "local", "export", "readonly":
		v.refuse(ws, pos+1, len(ws), "this ${{ }} is a variable name for "+shown+", whose subscript bash evaluates as code")
	case "printf", "wait":
		for i := pos + 1; i+1 < len(ws); i++ {
			if ws[i].text == "-v" {
				v.refuse(ws, i+1, i+2, "this ${{ }} is a variable name for "+shown+" -v, whose subscript bash evaluates as code")
			}
		}
	case "xargs":
		v.xargs(ws, pos, via, depth)
	case "find":
		v.find(ws, pos, via, depth)
	case "git":
		// git -c name=value sets configuration, and core.sshCommand,
		// core.pager, alias.* … are commands.
		// Before the subcommand, a value could be such an option itself.
		for i := pos + 1; i < len(ws); i++ {
			if ws[i].value || !ws[i].known {
				v.refuse(ws, i, i+1, "this ${{ }} stands among git's own options, where a value can name a command git runs")
				break
			}
			if !strings.HasPrefix(ws[i].text, "-") {
				break
			}
			switch ws[i].text {
			case "-c", "--config-env":
				v.refuse(ws, i+1, i+2, "this ${{ }} is configuration for git -c, where a value can name a command git runs")
				i++
			case "-C", "--git-dir", "--work-tree", "--namespace", "--exec-path":
				i++
			}
		}
	}
}

// readsStdin reports whether source or . reads standard input: the file it
// is given is /dev/stdin or alike, or is not written out.
func readsStdin(args []word) bool {
	if len(args) == 0 {
		return false
	}
	a := args[0]
	return !a.known || a.text == "/dev/stdin" || a.text == "/proc/self/fd/0" || a.text == "/dev/fd/0" || a.text == "-"
}

// wrapped skips a wrapper's options and operands, refusing a value among
// them, and returns where the command it runs starts.
func (v *verdict) wrapped(ws []word, pos int, cmd string, w wrapper) int {
	i := pos + 1
	for ; i < len(ws); i++ {
		a := ws[i]
		if cmd == "env" && a.prefix && assignPrefix().MatchString(a.text) {
			if m := assignPrefix().FindStringSubmatch(a.text); codeVariables[m[1]] {
				v.refuse(ws, i, i+1, "this ${{ }} is assigned to "+m[1]+", which names or holds code that runs")
			}
			continue
		}
		if a.value || !a.known {
			v.refuse(ws, i, len(ws), fmt.Sprintf(reasonWrap, cmd))
			return len(ws)
		}
		if a.text == "--" {
			i++
			break
		}
		if cmd == "env" && a.text == "-" {
			continue // env - is env -i
		}
		if len(a.text) < 2 || a.text[0] != '-' {
			break
		}
		if cmd == "env" && (a.text == "-S" || strings.HasPrefix(a.text, "--split-string") || strings.HasPrefix(a.text, "-S")) {
			// env -S splits its operand into a command line.
			v.refuse(ws, i, len(ws), "this ${{ }} is split into a command line by env -S")
			return len(ws)
		}
		if cmd == "command" && (a.text == "-v" || a.text == "-V") {
			return i + 1 // command -v names, and runs nothing
		}
		for _, t := range w.takes {
			if a.text == t {
				i++
				v.refuse(ws, i, i+1, fmt.Sprintf(reasonWrap, cmd))
			}
		}
	}
	for k := 0; k < w.operands && i < len(ws); k++ {
		v.refuse(ws, i, i+1, fmt.Sprintf(reasonWrap, cmd))
		i++
	}
	return i
}

// shell judges a shell's command line: values are refused in its options
// and its script (the operand of -c, or the script file it reads), and are
// data after it, where the script sees them as "$1", "$2"…
func (v *verdict) shell(ws []word, pos int, cmd, via string, takes []string) {
	shown := cmd + through(via)
	code, stdin := false, false
	i := pos + 1
	for ; i < len(ws); i++ {
		a := ws[i]
		if !a.known {
			break
		}
		if a.text == "--" || a.text == "-" {
			i++
			break
		}
		if len(a.text) < 2 || (a.text[0] != '-' && a.text[0] != '+') {
			break
		}
		if !strings.HasPrefix(a.text, "--") {
			code = code || strings.ContainsRune(a.text[1:], 'c')
			stdin = stdin || strings.ContainsRune(a.text[1:], 's')
		}
		for _, t := range takes {
			if a.text == t {
				i++
			}
		}
	}
	v.refuse(ws, pos+1, i, fmt.Sprintf(reasonCode, shown))
	switch {
	case code:
		v.refuse(ws, i, i+1, fmt.Sprintf(reasonShell, cmd+" -c"+through(via)))
		if i >= len(ws) {
			return
		}
		why := "the script is not written out, so flow cannot tell what it does with it"
		if ws[i].known {
			why = positionalFault(ws[i].text, v.nested)
		}
		if why != "" {
			v.refuse(ws, i+1, len(ws), "this ${{ }} is an argument after the script of "+cmd+" -c"+through(via)+": "+why)
		}
	case stdin || i >= len(ws):
		v.stdin = shown
	default:
		v.refuse(ws, i, i+1, "this ${{ }} names the script "+shown+" runs")
		if readsStdin(ws[i:]) {
			v.stdin = shown
		}
	}
}

// python judges python's command line: values are refused in its options,
// its -c code, its -m module and its script's name, and are data after
// them (sys.argv).
func (v *verdict) python(ws []word, pos int, shown string) {
	i := pos + 1
	done := false
	for ; i < len(ws) && !done; i++ {
		a := ws[i]
		if !a.known {
			break
		}
		if a.text == "-" || len(a.text) < 2 || a.text[0] != '-' {
			break
		}
		if a.text == "--" {
			i++
			break
		}
		if a.text == "--check-hash-based-pycs" {
			i++
			continue
		}
		if strings.HasPrefix(a.text, "--") {
			continue
		}
		for k, c := range a.text[1:] {
			if strings.ContainsRune("cmWX", c) {
				if k == len(a.text)-2 {
					i++ // the operand is the next word
				}
				done = c == 'c' || c == 'm'
				break
			}
		}
	}
	if done {
		v.refuse(ws, pos+1, i, fmt.Sprintf(reasonCode, shown))
		return
	}
	v.refuse(ws, pos+1, i+1, fmt.Sprintf(reasonCode, shown))
	if i >= len(ws) || ws[i].text == "-" {
		v.stdin = shown
	}
}

// xargs runs a command with what it reads as arguments: values are refused
// in its own options, its command is judged as any, and when that command
// is an evaluator, what xargs reads is code.
func (v *verdict) xargs(ws []word, pos int, via string, depth int) {
	shown := "xargs" + through(via)
	takes := []string{"-I", "-L", "-l", "-n", "-P", "-d", "-E", "-e", "-a", "-s", "--max-args", "--max-procs", "--delimiter", "--arg-file", "--max-chars", "--replace", "--max-lines", "--eof"}
	i := pos + 1
	for ; i < len(ws); i++ {
		a := ws[i]
		if a.value || !a.known {
			v.refuse(ws, i, len(ws), fmt.Sprintf(reasonWrap, shown))
			return
		}
		if a.text == "--" {
			i++
			break
		}
		if len(a.text) < 2 || a.text[0] != '-' {
			break
		}
		for _, t := range takes {
			if a.text == t {
				i++
				v.refuse(ws, i, i+1, fmt.Sprintf(reasonWrap, shown))
			}
		}
	}
	if i >= len(ws) {
		return // xargs echo
	}
	sub := verdict{why: make([]string, len(ws))}
	sub.from(ws, i, join(via, "xargs"), depth+1)
	for k := range ws {
		if sub.why[k] != "" && v.why[k] == "" {
			v.why[k] = sub.why[k]
		}
	}
	if n := ws[i]; !n.known || isEvaluator(commandName(n.text)) || sub.stdin != "" {
		v.stdin = shown + " " + n.text
	}
}

// find runs the command after -exec, -execdir, -ok or -okdir up to ; or +.
func (v *verdict) find(ws []word, pos int, via string, depth int) {
	for i := pos + 1; i < len(ws); i++ {
		switch ws[i].text {
		case "-exec", "-execdir", "-ok", "-okdir":
			end := i + 1
			for end < len(ws) && ws[end].text != ";" && ws[end].text != "+" {
				end++
			}
			sub := verdict{why: make([]string, end)}
			sub.from(ws[:end], i+1, join(via, "find "+ws[i].text), depth+1)
			for k := i + 1; k < end; k++ {
				if sub.why[k] != "" && v.why[k] == "" {
					v.why[k] = sub.why[k]
				}
			}
			i = end
		}
	}
}
