package flows

import (
	"cmp"
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/flowrun/flow/schema"
)

// reader holds what compileScript knows of a parsed script while it judges
// where each ${{ }} stands: the text parsed (with placeholders) and the
// verdict of each command line read so far.
type reader struct {
	text, marker string
	calls        map[*syntax.CallExpr]verdict
	// positional: the values are the script's positional parameters ($1,
	// "$@"), not placeholders: the reader judges a bash -c script written
	// out in a command line, depth levels down.
	positional bool
	depth      int
	inputs     map[syntax.Node]string // stdinEvaluator's answers
	args       map[*syntax.Word]int   // each argument's index in its command line
	stack      []syntax.Node          // the ancestors of the node being read, outermost first
	places     []place                // what each of them tells, worked out when asked
	// tainted are the script's variables that hold a value, judged where
	// they are expanded as a ${{ }} would be; reported, those refused.
	tainted  map[string]taint
	reported map[string]bool
	// source is the script as written, and shifts map offsets of text
	// onto it, for the places taint faults name.
	source string
	shifts []shift
}

// argIndex is child's index among call's arguments, or -1.
func (r *reader) argIndex(call *syntax.CallExpr, child syntax.Node) int {
	w, ok := child.(*syntax.Word)
	if !ok {
		return -1
	}
	r.verdict(call)
	if i, ok := r.args[w]; ok && i < len(call.Args) && call.Args[i] == w {
		return i
	}
	return -1
}

// verdict judges a command line once.
func (r *reader) verdict(call *syntax.CallExpr) verdict {
	if v, ok := r.calls[call]; ok {
		return v
	}
	ws := make([]word, len(call.Args))
	if r.args == nil {
		r.args = map[*syntax.Word]int{}
	}
	for i, a := range call.Args {
		ws[i] = r.word(a)
		r.args[a] = i
	}
	v := judgeAt(ws, r.depth)
	r.calls[call] = v
	return v
}

// word is what the loader knows of a shell word before the script runs.
func (r *reader) word(w *syntax.Word) word {
	from, to := int(w.Pos().Offset()), int(w.End().Offset())
	wd := word{value: from <= to && to <= len(r.text) && strings.Contains(r.text[from:to], r.marker), prefix: true}
	if r.positional {
		wd.value = holdsPositional(w)
	} else if r.holdsTainted(w) {
		wd.value = true
	}
	var b strings.Builder
	known := true
	for _, p := range w.Parts {
		switch x := p.(type) {
		case *syntax.Lit:
			b.WriteString(unescapeLit(x.Value))
		case *syntax.SglQuoted:
			if x.Dollar {
				known = false
			} else {
				b.WriteString(x.Value)
			}
		case *syntax.DblQuoted:
			for _, q := range x.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok {
					known = false
					break
				}
				b.WriteString(l.Value)
			}
		default:
			known = false
		}
		if !known {
			break
		}
	}
	wd.text = b.String()
	if k := strings.Index(wd.text, r.marker); k >= 0 && r.marker != "" {
		wd.text, known = wd.text[:k], false
	}
	wd.known = known && !wd.value
	return wd
}

// unescapeLit drops the backslashes of an unquoted word (\bash is bash).
func unescapeLit(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// refusedCall says why a value cannot be argument child of a command line:
// the command it reaches, wrappers unwrapped, runs it as code.
func (r *reader) refusedCall(call *syntax.CallExpr, child syntax.Node) (reason, hint string) {
	if i := r.argIndex(call, child); i >= 0 {
		why := r.verdict(call).why[i]
		switch {
		case why == "":
			return "", ""
		case strings.HasPrefix(why, "this ${{ }} is in the script of"):
			return why, hintShellC
		case strings.Contains(why, "variable name"):
			return why, "a value cannot name a variable; " + hintEnv
		}
		return why, hintEval
	}
	return "", ""
}

// refusedInput says why a value cannot stand in a redirection of statement
// s: it feeds the standard input of a command that runs its input as code
// (bash <<EOF, . /dev/stdin <<<, python3 < file).
func (r *reader) refusedInput(s *syntax.Stmt, child syntax.Node) (reason, hint string) {
	rd, ok := child.(*syntax.Redirect)
	if !ok || s.Cmd == nil || (rd.N != nil && rd.N.Value != "0") {
		return "", ""
	}
	switch rd.Op {
	case syntax.RdrIn, syntax.RdrInOut, syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
		if by := r.stdinEvaluator(s.Cmd); by != "" {
			return "this ${{ }} is fed to the standard input of " + by + ", which runs it as code", hintEval
		}
	}
	return "", ""
}

// stdinEvaluator names a command in n, a command that reads a value on its
// standard input, that runs what it reads as code, or is "". A simple
// command does when its verdict says so (bash, python3 -, . /dev/stdin);
// in a compound one (a loop, a block, a subshell) any evaluator does, as
// the input may reach it through a variable (while read l; do eval "$l").
func (r *reader) stdinEvaluator(n syntax.Node) string {
	if by, ok := r.inputs[n]; ok {
		return by // a long pipeline of values asks once per stage, not once per value
	}
	if r.inputs == nil {
		r.inputs = map[syntax.Node]string{}
	}
	by := r.stdinEvaluatorOf(n)
	r.inputs[n] = by
	return by
}

func (r *reader) stdinEvaluatorOf(n syntax.Node) string {
	for {
		switch x := n.(type) {
		case *syntax.Stmt:
			n = x.Cmd
			continue
		case *syntax.BinaryCmd:
			if by := r.stdinEvaluator(x.X); by != "" {
				return by
			}
			return r.stdinEvaluator(x.Y) // remembered: each stage of a pipeline once
		case *syntax.CallExpr:
			if len(x.Args) == 0 {
				return ""
			}
			return r.verdict(x).stdin
		}
		break
	}
	by := ""
	syntax.Walk(n, func(m syntax.Node) bool {
		if c, ok := m.(*syntax.CallExpr); ok && by == "" && len(c.Args) > 0 {
			v := r.verdict(c)
			by = cmp.Or(v.stdin, v.runs)
		}
		return by == ""
	})
	return by
}

// argvShell refuses a ${{ }} of a run: list that reaches a command which
// runs it as code ([bash, -c, "…${{ x }}…"]): the list is a command line
// that no shell reads, judged as one.
func (c *checker) argvShell(src []schema.String, argv []*Template) {
	ws := make([]word, len(argv))
	for i, t := range argv {
		ws[i] = templateWord(t)
	}
	v := judge(ws)
	for i, why := range v.why {
		if why == "" {
			continue
		}
		hint := hintEval
		if strings.HasPrefix(why, "this ${{ }} is in the script of") {
			hint = hintShellC
		}
		c.diags.Add(src[i].PosAt(firstExprOff(argv[i])), schema.CodeShell, hint, "%s", why)
	}
}

// templateWord is what the loader knows of one element of a run: list.
func templateWord(t *Template) word {
	w := word{known: true, prefix: true}
	for _, p := range t.Parts {
		if p.Expr != nil {
			w.value, w.known = true, false
			break
		}
		w.text += p.Text
	}
	return w
}

func firstExprOff(t *Template) int {
	for _, p := range t.Parts {
		if p.Expr != nil {
			return p.off
		}
	}
	return 0
}

// maxNested is how many bash -c scripts deep flow reads a script written
// out in a command line; deeper, its positional values are refused.
const maxNested = 4

// positionalFault judges the script of a shell's -c, written out in the
// command line, for the values given after it: they are its positional
// parameters, so each $1, "$@" … is judged as a ${{ }} standing there
// would be (bash -c 'eval "$1"' _ "${{ x }}" runs the value; so does
// bash -c 'echo $(( $1 ))'). It returns why, or "".
func positionalFault(script string, depth int) string {
	if depth >= maxNested {
		return "the script it is given to nests bash -c more than " + fmt.Sprint(maxNested) + " deep"
	}
	file, err := syntax.NewParser(syntax.KeepComments(true), syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(script), "")
	if err != nil {
		return "the script it is given to does not parse as bash, so flow cannot tell what the script does with it"
	}
	r := &reader{text: script, calls: map[*syntax.CallExpr]verdict{}, positional: true, depth: depth + 1}
	why := ""
	syntax.Walk(file, func(n syntax.Node) bool {
		if n == nil {
			r.pop()
			return true
		}
		if pe, ok := n.(*syntax.ParamExp); ok && why == "" && isPositional(pe) {
			if pe.Excl {
				why = "the script expands it indirectly (${!N}), naming a variable whose subscript bash evaluates"
			} else if _, reason, _ := r.placeOf(n, int(pe.Pos().Offset())); reason != "" {
				why = "where the script puts it, it " + strings.TrimPrefix(reason, "this ${{ }} ")
			}
		}
		r.push(n)
		return true
	})
	return why
}

// isPositional reports whether p expands a positional parameter.
func isPositional(p *syntax.ParamExp) bool {
	if p.Param == nil {
		return false
	}
	v := p.Param.Value
	return v == "@" || v == "*" || v != "" && strings.Trim(v, "0123456789") == ""
}

// holdsPositional reports whether w expands a positional parameter.
func holdsPositional(w *syntax.Word) bool {
	found := false
	syntax.Walk(w, func(n syntax.Node) bool {
		if p, ok := n.(*syntax.ParamExp); ok && isPositional(p) {
			found = true
		}
		return !found
	})
	return found
}

// through says which wrappers a command was reached by.
func through(via string) string {
	if via == "" {
		return ""
	}
	return " (through " + via + ")"
}

func join(via, cmd string) string {
	if via == "" {
		return cmd
	}
	return via + ", " + cmd
}

func isEvaluator(cmd string) bool {
	_, a := evaluators[cmd]
	_, b := shells[cmd]
	_, c := wrappers[cmd]
	return a || b || c || cmd == "python" || cmd == "pypy" || cmd == "xargs" || cmd == "find"
}

// place is what the pairs of ancestors down to a node tell of a value
// below it, worked out once per node while it is on the stack: reading
// each value's place by walking up to the root made a script nested or
// piped n deep cost n² (20,000 values in one pipeline took 8 s).
type place struct {
	refusalDone, ctxDone bool
	reason, hint         string
	ctx                  placeCtx
}

// placeCtx is how a value is referred to below a node, when an ancestor
// decides it (inside "…", $( ), a here-document).
type placeCtx struct {
	decided      bool
	ctx          int
	reason, hint string
}

func (r *reader) push(n syntax.Node) {
	r.stack = append(r.stack, n)
	r.places = append(r.places, place{})
}

func (r *reader) pop() {
	r.stack = r.stack[:len(r.stack)-1]
	r.places = r.places[:len(r.places)-1]
}

// refusalAt is the innermost refusal among the pairs of ancestors from the
// root down to r.stack[k].
func (r *reader) refusalAt(k int) (reason, hint string) {
	if k <= 0 {
		return "", ""
	}
	p := &r.places[k]
	if !p.refusalDone {
		p.reason, p.hint = r.refused(r.stack[k-1], r.stack[k])
		if p.reason == "" {
			p.reason, p.hint = r.refusalAt(k - 1)
		}
		p.refusalDone = true
	}
	return p.reason, p.hint
}

// ctxAt is the innermost context decided from the root down to r.stack[k].
func (r *reader) ctxAt(k int) placeCtx {
	if k <= 0 {
		return placeCtx{}
	}
	p := &r.places[k]
	if !p.ctxDone {
		p.ctx = ctxOf(r.stack[k-1], r.stack[k])
		if !p.ctx.decided {
			p.ctx = r.ctxAt(k - 1)
		}
		p.ctxDone = true
	}
	return p.ctx
}

// ctxOf is how parent p, on the way to child, decides the reference to a
// value below it, if it does.
func ctxOf(p, child syntax.Node) placeCtx {
	switch p := p.(type) {
	case *syntax.DblQuoted:
		return placeCtx{decided: true, ctx: ctxDouble}
	case *syntax.CmdSubst, *syntax.ProcSubst:
		return placeCtx{decided: true, ctx: ctxBare}
	case *syntax.Redirect:
		if child == p.Hdoc {
			if quotedDelimiter(p.Word) {
				return placeCtx{decided: true, reason: "this ${{ }} is in a quoted here-document, where no variable is expanded", hint: "unquote the delimiter (<<EOF), or " + hintEnv}
			}
			return placeCtx{decided: true, ctx: ctxDouble}
		}
	}
	return placeCtx{}
}
