package flows

import (
	"errors"
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Script is a `run:` string compiled for `bash -c` so that no value ever
// becomes shell code. Each `${{ expr }}` of the source is replaced in Text
// by a reference to an environment variable, quoted for where it stands,
// and the engine passes the expression's value in that variable: the shell
// expands a variable once and never parses what it holds, so `;`, `$(…)`,
// backticks, quotes and newlines in a value stay data. This is GitHub
// Actions' advice against script injection, applied by the loader: pass
// values through the environment, refer to them quoted.
type Script struct {
	Source string      // the script as written, with its ${{ }}
	Text   string      // the script bash runs
	Vars   []ScriptVar // the variables Text refers to, in order
}

// ScriptVar is one value a script receives in its environment.
type ScriptVar struct {
	Name string // FLOW_EXPR_1, FLOW_EXPR_2, …
	Expr *Expr
}

// shellFault is a ${{ }} of a script that could not be made safe: part is
// its index among the template's parts.
type shellFault struct {
	part   int
	env    string // or, for part -1, the env: entry whose value it is
	reason string
	hint   string
}

// The ways a value is referred to, by where the ${{ }} stands.
const (
	ctxBare    = iota // a word: "${V}"
	ctxDouble         // inside "…", or in the text of a here-document: ${V}
	ctxSingle         // inside '…': close, "${V}", reopen
	ctxANSI           // inside $'…': close, "${V}", reopen with $'
	ctxComment        // in a comment: nothing runs, ${V} keeps it readable
)

const (
	hintEnv     = "pass the value in env: and refer to it as \"$NAME\", or use the argv form (run: [prog, arg])"
	hintArithm  = "bash evaluates arithmetic operands as code; compare in a guard (when:), or pass the value in env: and check it is a number first"
	hintNoParse = "fix the script, or " + hintEnv
)

// compileScript compiles the parts of a run: template into a Script, or
// says which ${{ }} could not be made safe and why. env names the node's
// env: entries that hold a ${{ }}: the script's uses of them are judged
// too (shelltaint.go).
func compileScript(source string, parts []TemplatePart, env []string) (*Script, []shellFault) {
	sc := &Script{Source: source}
	hasExpr := false
	for _, p := range parts {
		hasExpr = hasExpr || p.Expr != nil
	}
	if !hasExpr && len(env) > 0 {
		if faults := envFaults(source, env); len(faults) > 0 {
			return nil, faults
		}
	}
	if !hasExpr {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		sc.Text = b.String()
		return sc, nil
	}
	marker := placeholderMarker(parts)
	var src strings.Builder
	var shifts []shift
	for i, p := range parts {
		if p.Expr == nil {
			src.WriteString(p.Text)
			continue
		}
		shifts = append(shifts, shift{text: src.Len(), source: p.off})
		src.WriteString(placeholder(marker, i))
		shifts = append(shifts, shift{text: src.Len(), source: exprEnd(source, p.off)})
	}
	text := src.String()
	parser := syntax.NewParser(syntax.KeepComments(true), syntax.Variant(syntax.LangBash))
	file, err := parser.Parse(strings.NewReader(text), "")
	if err != nil {
		msg := err.Error()
		var pe syntax.ParseError
		if errors.As(err, &pe) {
			msg = pe.Text
		}
		return nil, []shellFault{{part: firstExpr(parts), reason: "the script does not parse as bash (" + msg + "), so where its ${{ }} stand cannot be told", hint: hintNoParse}}
	}
	r := &reader{text: text, marker: marker, calls: map[*syntax.CallExpr]verdict{}, source: source, shifts: shifts}
	r.tainted = r.taintedVars(file, parts, env)
	found := map[int]int{} // part index → context
	var faults []shellFault
	syntax.Walk(file, func(n syntax.Node) bool {
		if n == nil {
			r.pop()
			return true
		}
		if f, ok := r.taintFault(n); ok {
			faults = append(faults, f)
		}
		var value string
		var off int
		switch x := n.(type) {
		case *syntax.Lit:
			value, off = x.Value, int(x.ValuePos.Offset())
		case *syntax.SglQuoted:
			value, off = x.Value, int(x.Left.Offset())+1
			if x.Dollar {
				off++
			}
		case *syntax.Comment:
			value, off = x.Text, int(x.Hash.Offset())+1
		}
		for k := strings.Index(value, marker); k >= 0; {
			i, ok := holderAt(value[k:], marker, parts)
			at := off + k
			switch {
			case !ok || !strings.HasPrefix(text[min(at, len(text)):], placeholder(marker, i)):
				// Not a placeholder this compile made, or not where it was put.
			default:
				ctx, reason, hint := r.placeOf(n, at)
				if reason != "" {
					faults = append(faults, shellFault{part: i, reason: reason, hint: hint})
				}
				found[i] = ctx
			}
			next := strings.Index(value[k+1:], marker)
			if next < 0 {
				break
			}
			k += 1 + next
		}
		r.push(n)
		return true
	})
	for i, p := range parts {
		if _, ok := found[i]; p.Expr != nil && !ok {
			faults = append(faults, shellFault{part: i, reason: "flow could not tell where this ${{ }} stands in the script", hint: hintEnv})
		}
	}
	if len(faults) > 0 {
		return nil, faults
	}
	// Replace each placeholder by its reference, in order.
	var out strings.Builder
	for i, p := range parts {
		if p.Expr == nil {
			out.WriteString(p.Text)
			continue
		}
		name := fmt.Sprintf("FLOW_EXPR_%d", len(sc.Vars)+1)
		sc.Vars = append(sc.Vars, ScriptVar{Name: name, Expr: p.Expr})
		out.WriteString(reference(found[i], name))
	}
	sc.Text = out.String()
	if _, err := parser.Parse(strings.NewReader(sc.Text), ""); err != nil {
		return nil, []shellFault{{part: firstExpr(parts), reason: "the script with its values passed as variables does not parse as bash (" + err.Error() + ")", hint: hintEnv}}
	}
	return sc, nil
}

// reference is how a script refers to variable name where a ${{ }} stood.
func reference(ctx int, name string) string {
	switch ctx {
	case ctxDouble, ctxComment:
		return "${" + name + "}"
	case ctxSingle:
		return `'"${` + name + `}"'`
	case ctxANSI:
		return `'"${` + name + `}"$'`
	}
	return `"${` + name + `}"`
}

// placeOf tells how a placeholder at offset at of text, inside node n with
// the ancestors r.stack (outermost first), is referred to, or why it cannot
// be.
func (r *reader) placeOf(n syntax.Node, at int) (ctx int, reason, hint string) {
	text := r.text
	if _, ok := n.(*syntax.Comment); ok {
		return ctxComment, "", ""
	}
	sq, single := n.(*syntax.SglQuoted)
	if !single && escaped(text, at) {
		return 0, "a backslash stands right before this ${{ }}", "remove the backslash; the value is inserted as it is"
	}
	if single && sq.Dollar && escaped(text, at) {
		return 0, "a backslash stands right before this ${{ }} inside $'…'", "remove the backslash; the value is inserted as it is"
	}
	top := len(r.stack) - 1
	if top >= 0 {
		if reason, hint := r.refused(r.stack[top], n); reason != "" {
			return 0, reason, hint
		}
		if reason, hint := r.refusalAt(top); reason != "" {
			return 0, reason, hint
		}
	}
	if single {
		if sq.Dollar {
			return ctxANSI, "", ""
		}
		return ctxSingle, "", ""
	}
	if top >= 0 {
		if c := ctxOf(r.stack[top], n); c.decided {
			return c.ctx, c.reason, c.hint
		}
		if c := r.ctxAt(top); c.decided {
			return c.ctx, c.reason, c.hint
		}
	}
	return ctxBare, "", ""
}

// refused says why a value cannot stand below node p (on the way to child).
func (r *reader) refused(p, child syntax.Node) (reason, hint string) {
	switch p := p.(type) {
	case *syntax.ArithmExp, *syntax.ArithmCmd, *syntax.LetClause, *syntax.CStyleLoop,
		*syntax.BinaryArithm, *syntax.UnaryArithm, *syntax.ParenArithm:
		return "this ${{ }} is in arithmetic, where bash evaluates a value as code", hintArithm
	case *syntax.BinaryTest:
		switch p.Op {
		case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
			return "this ${{ }} is an operand of " + p.Op.String() + " in [[ ]], which bash evaluates as arithmetic, running what a value holds", hintArithm
		}
	case *syntax.UnaryTest:
		if p.Op == syntax.TsVarSet || p.Op == syntax.TsRefVar {
			return "this ${{ }} names a variable for " + p.Op.String() + ", whose subscript bash evaluates as code", hintEnv
		}
	case *syntax.CmdSubst:
		if p.Backquotes {
			return "this ${{ }} is inside backquotes", "use $( … ) instead of ` … `"
		}
	case *syntax.ParamExp:
		switch {
		case child == p.Param || child == p.NestedParam:
			return "this ${{ }} is part of a variable's name", "a value cannot name a variable; " + hintEnv
		case child == p.Index, p.Slice != nil && (child == p.Slice.Offset || child == p.Slice.Length):
			return "this ${{ }} is an index or offset, which bash evaluates as arithmetic", hintArithm
		}
	case *syntax.Assign:
		switch {
		case child == p.Name:
			return "this ${{ }} is part of a variable's name", "a value cannot name a variable; " + hintEnv
		case child == p.Index:
			return "this ${{ }} is an array index, which bash evaluates as arithmetic", hintArithm
		case child == p.Value && p.Name != nil && codeVariables[p.Name.Value]:
			return "this ${{ }} is assigned to " + p.Name.Value + ", which names or holds code that runs", hintEval
		}
	case *syntax.ArrayElem:
		if child == p.Index {
			return "this ${{ }} is an array index, which bash evaluates as arithmetic", hintArithm
		}
	case *syntax.CallExpr:
		if reason, hint := r.refusedArg(p, child); reason != "" {
			return reason, hint
		}
		return r.refusedCall(p, child)
	case *syntax.Stmt:
		return r.refusedInput(p, child)
	case *syntax.BinaryCmd:
		if (p.Op == syntax.Pipe || p.Op == syntax.PipeAll) && child == p.X {
			if by := r.stdinEvaluator(p.Y); by != "" {
				return "this ${{ }} is piped into " + by + ", which runs what it reads as code", hintEval
			}
		}
	case *syntax.DeclClause:
		if a, ok := child.(*syntax.Assign); ok && a.Naked && a.Value != nil {
			return "this ${{ }} is an argument of " + p.Variant.Value + ", which reads it as NAME=value and evaluates a subscript in it as code", hintEval
		}
		for _, a := range p.Args {
			if a.Naked && a.Value != nil && strings.HasPrefix(a.Value.Lit(), "-") && strings.ContainsAny(a.Value.Lit(), "in") {
				return "this ${{ }} is assigned by " + p.Variant.Value + " " + a.Value.Lit() + ", which evaluates values or subscripts as arithmetic", hintArithm
			}
		}
	case *syntax.FuncDecl:
		return "this ${{ }} is part of a function's name", "a value cannot name a function; " + hintEnv
	case *syntax.WordIter:
		if child == p.Name {
			return "this ${{ }} is part of a loop variable's name", "a value cannot name a variable; " + hintEnv
		}
	case *syntax.Redirect:
		switch {
		case child == p.N:
			return "this ${{ }} is part of a redirection's file descriptor", hintEnv
		case child == p.Word && (p.Op == syntax.Hdoc || p.Op == syntax.DashHdoc):
			return "this ${{ }} is part of a here-document's delimiter", "write the delimiter out (<<EOF)"
		}
	case *syntax.ExtGlob:
		return "this ${{ }} is inside an extended glob pattern", hintEnv
	}
	return "", ""
}

// refusedArg says why a value cannot be argument child of a builtin that
// takes it as a variable's name, whose subscript bash evaluates as
// arithmetic (read, unset, printf -v). Commands that run their arguments
// as code are refusedCall's.
func (r *reader) refusedArg(call *syntax.CallExpr, child syntax.Node) (reason, hint string) {
	k := r.argIndex(call, child)
	if k < 1 {
		return "", ""
	}
	name := call.Args[0].Lit()
	prev := call.Args[k-1].Lit()
	switch {
	case name == "read" || name == "unset" || name == "mapfile" || name == "readarray" || name == "getopts",
		prev == "-v" && (name == "printf" || name == "wait"):
		return "this ${{ }} is a variable name for " + name + ", whose subscript bash evaluates as code", "a value cannot name a variable; " + hintEnv
	}
	return "", ""
}

// escaped reports whether an odd number of backslashes stands before at.
func escaped(text string, at int) bool {
	n := 0
	for i := at - 1; i >= 0 && text[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// quotedDelimiter reports whether a here-document's delimiter is quoted,
// which turns expansion in its text off.
func quotedDelimiter(w *syntax.Word) bool {
	if w == nil {
		return false
	}
	for _, p := range w.Parts {
		switch x := p.(type) {
		case *syntax.SglQuoted, *syntax.DblQuoted:
			return true
		case *syntax.Lit:
			if strings.Contains(x.Value, `\`) {
				return true
			}
		}
	}
	return false
}

// placeholder stands for part i while the script is parsed: a word of
// letters and digits, which bash reads as literal text wherever it is.
func placeholder(marker string, i int) string { return fmt.Sprintf("%s%05dz", marker, i) }

// holderAt reads the part index of the placeholder at the start of s.
func holderAt(s, marker string, parts []TemplatePart) (int, bool) {
	s = strings.TrimPrefix(s, marker)
	if len(s) < 6 || s[5] != 'z' {
		return 0, false
	}
	i := 0
	for _, c := range s[:5] {
		if c < '0' || c > '9' {
			return 0, false
		}
		i = i*10 + int(c-'0')
	}
	return i, i < len(parts) && parts[i].Expr != nil
}

// placeholderMarker is a word that appears in none of the template's text,
// so that each placeholder is found where it was put and nowhere else.
func placeholderMarker(parts []TemplatePart) string {
	for i := 0; ; i++ {
		m := fmt.Sprintf("FLOWEXPR%dx", i)
		clash := false
		for _, p := range parts {
			clash = clash || strings.Contains(p.Text, m)
		}
		if !clash {
			return m
		}
	}
}

func firstExpr(parts []TemplatePart) int {
	for i, p := range parts {
		if p.Expr != nil {
			return i
		}
	}
	return 0
}
