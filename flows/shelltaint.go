package flows

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"

	"github.com/flowrun/flow/schema"
)

// A value moved into a variable is still the value: `X="${{ x }}"; eval
// "$X"` runs it as surely as `eval "${{ x }}"`. So the loader follows each
// value into the variables the script gives it (an assignment, a for loop,
// read from a here-string, another assignment from one of those) and into
// the variables of the node's env: that hold one, and judges every
// expansion of such a variable where it stands, as a ${{ }} standing there
// would be (docs/flow-files.md, "Values are data, never shell code").

// taint is where a variable of a script got a value: the ${{ }} (its index
// among the template's parts), or the env: entry of that name (part -1).
type taint struct {
	part int
	env  string
}

const hintTaint = "give the variable to a command as data (an argument, or \"$1\" after a bash -c script written out), never to code that parses it; code that needs the value reads it from env: (os.environ in Python, process.env in Node)"

var shellName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// source is a place where the script gives variables a value: names get
// it from the nodes in from.
type source struct {
	names []string
	from  []syntax.Node
}

// taintedVars names the variables of file that hold a value: env lists the
// node's env: entries whose value holds a ${{ }}. It is linear in the
// script: each source is read once, and a variable's taint is passed on
// to the sources that read it once, when it is first tainted.
func (r *reader) taintedVars(file *syntax.File, parts []TemplatePart, env []string) map[string]taint {
	var sources []source
	syntax.Walk(file, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.Assign:
			if x.Name != nil && (x.Value != nil || x.Array != nil) {
				s := source{names: []string{x.Name.Value}}
				if x.Value != nil {
					s.from = append(s.from, x.Value)
				}
				if x.Array != nil {
					s.from = append(s.from, x.Array)
				}
				sources = append(sources, s)
			}
		case *syntax.WordIter:
			s := source{names: []string{x.Name.Value}}
			for _, w := range x.Items {
				s.from = append(s.from, w)
			}
			sources = append(sources, s)
		case *syntax.Stmt:
			if s, ok := readInto(x); ok {
				sources = append(sources, s)
			}
		}
		return true
	})
	tainted := map[string]taint{}
	var queue []string
	taintAll := func(names []string, t taint) {
		for _, name := range names {
			if _, had := tainted[name]; !had {
				tainted[name] = t
				queue = append(queue, name)
			}
		}
	}
	for _, name := range env {
		taintAll([]string{name}, taint{part: -1, env: name})
	}
	readBy := map[string][]int{} // variable → the sources that expand it
	for i, s := range sources {
		if part, ok := r.firstValue(s.from, parts); ok {
			taintAll(s.names, taint{part: part})
		}
		seen := map[string]bool{}
		for _, n := range s.from {
			syntax.Walk(n, func(m syntax.Node) bool {
				if pe, ok := m.(*syntax.ParamExp); ok && pe.Param != nil && !seen[pe.Param.Value] {
					seen[pe.Param.Value] = true
					readBy[pe.Param.Value] = append(readBy[pe.Param.Value], i)
				}
				return true
			})
		}
	}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, i := range readBy[v] {
			taintAll(sources[i].names, tainted[v])
		}
	}
	return tainted
}

// readInto is the variables a read (or mapfile) statement fills from its
// redirected standard input: read -r X <<< "${{ x }}".
func readInto(s *syntax.Stmt) (source, bool) {
	var out source
	call, ok := s.Cmd.(*syntax.CallExpr)
	if !ok || len(call.Args) == 0 || len(s.Redirs) == 0 {
		return out, false
	}
	switch name := call.Args[0].Lit(); name {
	case "read", "mapfile", "readarray":
		for i := 1; i < len(call.Args); i++ {
			a := call.Args[i].Lit()
			switch a {
			case "-d", "-p", "-n", "-N", "-t", "-u", "-i", "-C", "-c", "-O", "-s":
				i++ // their operand is not a name (read -a NAME is)
				continue
			}
			if shellName().MatchString(a) {
				out.names = append(out.names, a)
			}
		}
		if len(out.names) == 0 {
			out.names = []string{"REPLY", "MAPFILE"}
		}
	default:
		return out, false
	}
	for _, rd := range s.Redirs {
		if rd.N == nil || rd.N.Value == "0" {
			if rd.Word != nil {
				out.from = append(out.from, rd.Word)
			}
			if rd.Hdoc != nil {
				out.from = append(out.from, rd.Hdoc)
			}
		}
	}
	return out, len(out.from) > 0
}

// firstValue is the part of the first ${{ }} that stands in nodes.
func (r *reader) firstValue(nodes []syntax.Node, parts []TemplatePart) (int, bool) {
	if r.marker == "" {
		return 0, false
	}
	for _, n := range nodes {
		from, to := int(n.Pos().Offset()), int(n.End().Offset())
		if from > to || to > len(r.text) {
			continue
		}
		span := r.text[from:to]
		for k := strings.Index(span, r.marker); k >= 0; {
			if i, ok := holderAt(span[k:], r.marker, parts); ok {
				return i, true
			}
			next := strings.Index(span[k+1:], r.marker)
			if next < 0 {
				break
			}
			k += 1 + next
		}
	}
	return 0, false
}

// holdsTainted reports whether w expands a tainted variable.
func (r *reader) holdsTainted(w *syntax.Word) bool {
	if len(r.tainted) == 0 {
		return false
	}
	found := false
	syntax.Walk(w, func(n syntax.Node) bool {
		if p, ok := n.(*syntax.ParamExp); ok && p.Param != nil {
			_, found = r.tainted[p.Param.Value]
		}
		return !found
	})
	return found
}

// taintedUse says why the expansion pe of a tainted variable, whose
// ancestors are on r.stack, would run its value as code, or "".
func (r *reader) taintedUse(pe *syntax.ParamExp) string {
	name := pe.Param.Value
	line, col := r.sourcePlace(int(pe.Pos().Offset()))
	at := fmt.Sprintf("$%s at line %d, column %d of the script", name, line, col)
	if pe.Excl {
		return at + " expands indirectly (${!" + name + "}), naming a variable whose subscript bash evaluates as code"
	}
	_, reason, _ := r.placeOf(pe, int(pe.Pos().Offset()))
	if reason == "" || strings.HasPrefix(reason, "this ${{ }} is inside backquotes") {
		return "" // backquotes parse the text written in them, not what a variable holds
	}
	return at + " " + strings.TrimPrefix(reason, "this ${{ }} ")
}

// taintFault is the refusal of n, when it expands a tainted variable
// where its value would run as code: the first such use of each variable.
func (r *reader) taintFault(n syntax.Node) (shellFault, bool) {
	pe, ok := n.(*syntax.ParamExp)
	if !ok || pe.Param == nil || len(r.tainted) == 0 {
		return shellFault{}, false
	}
	name := pe.Param.Value
	t, ok := r.tainted[name]
	if !ok || r.reported[name] {
		return shellFault{}, false
	}
	use := r.taintedUse(pe)
	if use == "" {
		return shellFault{}, false
	}
	if r.reported == nil {
		r.reported = map[string]bool{}
	}
	r.reported[name] = true
	reason := "this ${{ }} is assigned to " + name + ", and " + use
	if t.env != "" {
		reason = "env: " + t.env + " holds a ${{ }}, and " + use
	}
	return shellFault{part: t.part, env: t.env, reason: reason, hint: hintTaint}, true
}

// envFaults judges a script without a ${{ }} of its own for its uses of
// the env: entries that hold one.
func envFaults(source string, env []string) []shellFault {
	file, err := syntax.NewParser(syntax.KeepComments(true), syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(source), "")
	if err != nil {
		return nil // bash will say; no value stands in the script itself
	}
	// A marker the script does not hold: no word of it holds a ${{ }}.
	r := &reader{text: source, marker: placeholderMarker([]TemplatePart{{Text: source}}), calls: map[*syntax.CallExpr]verdict{}, source: source}
	r.tainted = r.taintedVars(file, nil, env)
	var faults []shellFault
	syntax.Walk(file, func(n syntax.Node) bool {
		if n == nil {
			r.pop()
			return true
		}
		if f, ok := r.taintFault(n); ok {
			faults = append(faults, f)
		}
		r.push(n)
		return true
	})
	return faults
}

// valueEnv names the env: entries whose value holds a ${{ }}.
func valueEnv(env []schema.EnvVar) []string {
	var names []string
	for _, e := range env {
		if strings.Contains(e.Value.Value, "${{") {
			names = append(names, e.Name)
		}
	}
	return names
}

// envPos is where the first ${{ }} of env: entry name stands.
func envPos(env []schema.EnvVar, name string) schema.Pos {
	for _, e := range env {
		if e.Name == name {
			return e.Value.PosAt(strings.Index(e.Value.Value, "${{"))
		}
	}
	return schema.Pos{}
}

// shift is where a placeholder starts or ends, in the text parsed and in
// the script as written.
type shift struct{ text, source int }

// sourcePlace is the line and column (in characters, from 1) in the
// script as written of offset off of the text parsed.
func (r *reader) sourcePlace(off int) (line, col int) {
	src := off
	for _, s := range r.shifts {
		if s.text > off {
			break
		}
		src = s.source + off - s.text
	}
	src = min(max(src, 0), len(r.source))
	before := r.source[:src]
	line = 1 + strings.Count(before, "\n")
	col = 1 + utf8.RuneCountInString(before[strings.LastIndexByte(before, '\n')+1:])
	return line, col
}

// exprEnd is the offset just after the ${{ }} that starts at off in source.
func exprEnd(source string, off int) int {
	if j := strings.Index(source[off:], "}}"); j >= 0 {
		return off + j + 2
	}
	return len(source)
}
