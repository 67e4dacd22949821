package schema

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"
)

// reader decodes document types from YAML nodes, keeping positions and
// collecting every problem instead of stopping at the first.
type reader struct {
	file   string
	diags  *Diagnostics
	src    []byte // the text parsed, to check the positions the parser reports
	lines  []int  // the offset of each line's start in src, built on first use
	cursor cursor // where offset last was, to go on from there
}

func (r *reader) pos(n ast.Node) Pos {
	switch v := n.(type) {
	case nil:
		return Pos{File: r.file}
	case *ast.MappingNode:
		// A block mapping's token is its first key's colon; point at the
		// key instead, where the mapping visibly starts.
		if !v.IsFlowStyle && len(v.Values) > 0 {
			return r.pos(v.Values[0])
		}
	case *ast.MappingValueNode:
		if v.Key != nil {
			return r.pos(v.Key)
		}
	}
	return r.tokPos(n.GetToken())
}

func (r *reader) tokPos(tk *token.Token) Pos {
	if tk == nil || tk.Position == nil {
		return Pos{File: r.file}
	}
	return Pos{File: r.file, Line: tk.Position.Line, Col: tk.Position.Column}
}

func (r *reader) errorf(n ast.Node, code Code, detail, format string, args ...any) {
	r.diags.Add(r.pos(n), code, detail, format, args...)
}

// unwrap strips anchors, tags and the `? ` of an explicit key so decoders
// see the value itself. Aliases were replaced by the values they name when
// the file was parsed (bounder.walk).
func unwrap(n ast.Node) ast.Node {
	for {
		switch v := n.(type) {
		case *ast.AnchorNode:
			n = v.Value
		case *ast.TagNode:
			n = v.Value
		case *ast.MappingKeyNode:
			n = v.Value
		default:
			return n
		}
	}
}

func isNull(n ast.Node) bool {
	_, ok := unwrap(n).(*ast.NullNode)
	return n == nil || ok
}

// entry is one key of a mapping.
type entry struct {
	key   string
	keyN  ast.Node
	value ast.Node
}

// mapping returns the entries of a mapping node in file order, reporting
// unknown keys against known (nil known = any key) and duplicate keys.
// Merge keys (`<<: *defaults`) add the keys of the mappings they name that
// the mapping does not give itself; of several merged mappings, the first
// that gives a key wins (YAML's merge key type).
func (r *reader) mapping(n ast.Node, what string, known []string) ([]entry, bool) {
	n = unwrap(n)
	var values []*ast.MappingValueNode
	switch m := n.(type) {
	case *ast.MappingNode:
		values = m.Values
	case *ast.MappingValueNode:
		values = []*ast.MappingValueNode{m}
	default:
		r.errorf(n, CodeType, "write "+what+" as a mapping of key: value", "%s must be a mapping, not %s", what, describe(n))
		return nil, false
	}
	seen := map[string]bool{}
	out := make([]entry, 0, len(values))
	var merges []ast.Node
	for _, mv := range values {
		if mv.Key == nil {
			continue
		}
		kn := unwrap(mv.Key)
		key := scalarText(kn)
		if _, ok := kn.(*ast.MergeKeyNode); ok {
			merges = append(merges, mv.Value)
			continue
		}
		if seen[key] {
			r.errorf(kn, CodeDuplicateKey, "remove one of them", "%s has the key %q twice", what, key)
			continue
		}
		seen[key] = true
		if known != nil && !contains(known, key) {
			hint := DidYouMean(key, known)
			if hint == "" {
				hint = "known keys: " + strings.Join(known, ", ")
			}
			r.errorf(kn, CodeUnknownKey, hint, "unknown key %q in %s", key, what)
			continue
		}
		out = append(out, entry{key: key, keyN: kn, value: mv.Value})
	}
	for _, m := range merges {
		out = r.merge(m, what, known, seen, out)
	}
	return out, true
}

// merge appends the entries of the mappings a merge key names that are not
// seen yet.
func (r *reader) merge(v ast.Node, what string, known []string, seen map[string]bool, out []entry) []entry {
	sources := []ast.Node{v}
	if seq, ok := unwrap(v).(*ast.SequenceNode); ok {
		sources = seq.Values
	}
	for _, s := range sources {
		switch unwrap(s).(type) {
		case *ast.MappingNode, *ast.MappingValueNode:
		default:
			r.errorf(s, CodeType, "merge mappings: `<<: *name` or `<<: [*a, *b]`", "<< must name a mapping, not %s", describe(s))
			continue
		}
		es, _ := r.mapping(s, what, known)
		for _, e := range es {
			if !seen[e.key] {
				seen[e.key] = true
				out = append(out, e)
			}
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func scalarText(n ast.Node) string {
	switch v := unwrap(n).(type) {
	case *ast.StringNode:
		return v.Value
	case *ast.LiteralNode:
		return v.Value.Value
	case nil:
		return ""
	case *ast.NullNode:
		return ""
	default:
		if tk := v.GetToken(); tk != nil {
			return tk.Value
		}
		return ""
	}
}

func describe(n ast.Node) string {
	switch unwrap(n).(type) {
	case nil, *ast.NullNode:
		return "empty"
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.BoolNode:
		return "a boolean"
	case *ast.IntegerNode, *ast.FloatNode:
		return "a number"
	default:
		return "a string"
	}
}

// isScalar reports whether n is a scalar (string, number, boolean, block).
func isScalar(n ast.Node) bool {
	switch unwrap(n).(type) {
	case *ast.StringNode, *ast.LiteralNode, *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode,
		*ast.InfinityNode, *ast.NanNode:
		return true
	}
	return false
}

// str reads a scalar as a string (numbers and booleans keep their text).
func (r *reader) str(n ast.Node, what string) String {
	n = unwrap(n)
	if isNull(n) {
		return String{Pos: r.pos(n)}
	}
	if !isScalar(n) {
		r.errorf(n, CodeType, "write "+what+" as a single value", "%s must be a string, not %s", what, describe(n))
		return String{Pos: r.pos(n)}
	}
	s := String{Value: scalarText(n), Pos: r.pos(n), memo: &posMemo{}}
	switch v := n.(type) {
	case *ast.LiteralNode:
		// The content token's own position is unreliable (column 0, and the
		// last line when folded); its text starts on the line after the
		// header.
		s.Style = Block
		hdr := r.pos(v)
		if !hdr.IsValid() || v.Value == nil || v.Value.GetToken() == nil {
			break
		}
		start := Pos{File: r.file, Line: hdr.Line + 1, Col: 1}
		if raw := v.Value.GetToken().Origin; r.holds(start, raw) {
			s.raw, s.rawPos = raw, start
			s.Pos = start
			s.Pos = s.PosAt(0)
		}
	default:
		tk := n.GetToken()
		if tk == nil || !s.Pos.IsValid() {
			break
		}
		switch tk.Type {
		case token.DoubleQuoteType:
			s.Style = DoubleQuoted
		case token.SingleQuoteType:
			s.Style = SingleQuoted
		}
		raw := strings.TrimLeft(tk.Origin, " \t\r\n")
		if raw == "" {
			break
		}
		if !r.holds(s.Pos, raw) {
			// The parser misplaces some multi-line plain scalars (a
			// continuation line starting with "-"): find the text instead.
			p, ok := r.find(raw, s.Pos.Line)
			if !ok {
				break
			}
			s.Pos = p
		}
		s.raw, s.rawPos = raw, s.Pos
		if s.Style != Plain {
			s.raw = s.raw[1:] // the opening quote
			s.rawPos.Col++
		}
	}
	return s
}

func (r *reader) integer(n ast.Node, what string, minimum int) Int {
	n = unwrap(n)
	out := Int{Pos: r.pos(n)}
	iv, ok := n.(*ast.IntegerNode)
	if !ok {
		r.errorf(n, CodeType, fmt.Sprintf("write a whole number, at least %d", minimum), "%s must be a whole number, not %s", what, describe(n))
		return out
	}
	var v int64
	switch x := iv.Value.(type) {
	case int64:
		v = x
	case uint64:
		v = int64(min(x, 1<<62))
	}
	if v < int64(minimum) || v > 1<<31 {
		r.errorf(n, CodeRange, fmt.Sprintf("use a number from %d up", minimum), "%s is %d, out of range", what, v)
		return out
	}
	out.Value, out.IsSet = int(v), true
	return out
}

func (r *reader) number(n ast.Node, what string) Float {
	n = unwrap(n)
	out := Float{Pos: r.pos(n)}
	switch v := n.(type) {
	case *ast.IntegerNode:
		f, _ := strconv.ParseFloat(v.GetToken().Value, 64)
		out.Value, out.IsSet = f, true
	case *ast.FloatNode:
		out.Value, out.IsSet = v.Value, true
	default:
		r.errorf(n, CodeType, "write a number such as 5 or 2.50", "%s must be a number, not %s", what, describe(n))
		return out
	}
	if out.Value < 0 {
		r.errorf(n, CodeRange, "use zero or more", "%s must not be negative", what)
		out.IsSet = false
	}
	return out
}

func (r *reader) boolean(n ast.Node, what string) Bool {
	n = unwrap(n)
	b, ok := n.(*ast.BoolNode)
	if !ok {
		r.errorf(n, CodeType, "write true or false", "%s must be true or false, not %s", what, describe(n))
		return Bool{Pos: r.pos(n)}
	}
	return Bool{Value: b.Value, Pos: r.pos(n), IsSet: true}
}

func (r *reader) duration(n ast.Node, what string) Duration {
	s := r.str(n, what)
	d := Duration{Pos: s.Pos, Raw: s.Value}
	if s.Value == "" {
		return d
	}
	v, err := time.ParseDuration(s.Value)
	if err != nil || v <= 0 {
		r.errorf(n, CodeDuration, "write a positive duration such as 90s, 10m or 1h30m", "%s %q is not a duration", what, s.Value)
		d.Raw = ""
		return d
	}
	d.Value = v
	return d
}

// list returns the items of a sequence; a null is an empty list.
func (r *reader) list(n ast.Node, what string) ([]ast.Node, bool) {
	n = unwrap(n)
	if isNull(n) {
		return nil, true
	}
	seq, ok := n.(*ast.SequenceNode)
	if !ok {
		r.errorf(n, CodeType, "write "+what+" as a list: [a, b] or one `- item` per line", "%s must be a list, not %s", what, describe(n))
		return nil, false
	}
	return seq.Values, true
}

func (r *reader) strings(n ast.Node, what string) []String {
	items, _ := r.list(n, what)
	out := make([]String, 0, len(items))
	for _, it := range items {
		out = append(out, r.str(it, what+" item"))
	}
	return out
}

// plainValue converts a YAML node into plain Go values (for defaults and
// schedule inputs).
func (r *reader) plainValue(n ast.Node) any {
	n = unwrap(n)
	switch v := n.(type) {
	case nil, *ast.NullNode:
		return nil
	case *ast.BoolNode:
		return v.Value
	case *ast.IntegerNode:
		// Exact: through a float64, integers past 2^53 were rounded.
		switch x := v.Value.(type) {
		case int64:
			return x
		case uint64:
			if x <= math.MaxInt64 {
				return int64(x)
			}
		}
		r.errorf(v, CodeRange, "write it as a string (quoted), or a smaller number", "%s is a whole number too large to keep exactly (past 9223372036854775807)", v.GetToken().Value)
		return nil
	case *ast.FloatNode:
		return v.Value
	case *ast.SequenceNode:
		out := make([]any, 0, len(v.Values))
		for _, it := range v.Values {
			out = append(out, r.plainValue(it))
		}
		return out
	case *ast.MappingNode, *ast.MappingValueNode:
		es, _ := r.mapping(v, "value", nil)
		out := make(map[string]any, len(es))
		for _, e := range es {
			out[e.key] = r.plainValue(e.value)
		}
		return out
	default:
		return scalarText(v)
	}
}
