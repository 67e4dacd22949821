package schema

import (
	"bytes"
	"errors"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// bom is the UTF-8 byte order mark some editors put at the start of a file.
var bom = []byte("\xEF\xBB\xBF")

// stripBOM drops a leading byte order mark: it is not part of the first
// key, and columns on the first line are counted without it, as editors
// show them.
func stripBOM(src []byte) []byte { return bytes.TrimPrefix(src, bom) }

// parse parses r.src into its first document's body, or returns nil when
// there is none or it may not be read. Limits are checked before parsing
// and after.
//
// Before: the size, then a linear scan of the text (prescan.go) that
// bounds what goccy/go-yaml's parser would do with it — nesting, keys in
// one mapping, and the path text it keeps for every node — each of which
// it handles in quadratic time or memory. After: the nesting and the
// number of nodes exactly, on the tree, with every alias expanded (an
// alias bomb is refused at the alias that passes the limit), so that no
// decoder walks more than Limits allow.
//
// The parser lets a key repeat: it would stop at the first repeat, hiding
// the file's other faults, while reader.mapping reports every one, naming
// what holds it.
func (r *reader) parse(l Limits) ast.Node {
	l = l.WithDefaults()
	if len(r.src) > l.FileBytes {
		r.diags.tooBig(r.file, l)
		return nil
	}
	if !r.prescan(l) {
		return nil
	}
	f, err := parser.ParseBytes(r.src, 0, parser.AllowDuplicateMapKey())
	if err != nil {
		pos := Pos{File: r.file, Line: 1, Col: 1}
		var msg string
		var ye interface {
			GetToken() *token.Token
			GetMessage() string
		}
		if errors.As(err, &ye) {
			// Not err.Error(): goccy/go-yaml prints the source around the
			// token with it, in time that grows with the square of the line.
			msg = ye.GetMessage()
			if tk := ye.GetToken(); tk != nil && tk.Position != nil {
				pos.Line, pos.Col = tk.Position.Line, max(tk.Position.Column, 1)
			}
		} else {
			msg = err.Error()
		}
		hint := "fix the YAML syntax at this position"
		if msg == msgMappingValue {
			if p, h, ok := overIndented(r.src, pos); ok {
				pos, hint = p, h
			}
		}
		r.diags.Add(pos, CodeYAML, hint, "%s", msg)
		return nil
	}
	if len(f.Docs) == 0 || f.Docs[0] == nil || f.Docs[0].Body == nil {
		r.diags.Add(Pos{File: r.file, Line: 1, Col: 1}, CodeEmpty, "a flow file is a YAML mapping with at least name: and nodes:", "the file is empty")
		return nil
	}
	if len(f.Docs) > 1 {
		r.diags.Add(Pos{File: r.file, Line: 1, Col: 1}, CodeYAML, "put one flow in each file", "the file holds %d YAML documents", len(f.Docs))
	}
	b := &bounder{r: r, l: l, anchors: map[string]*anchored{}}
	body, _, ok := b.walk(f.Docs[0].Body, 0)
	if !ok {
		return nil
	}
	return body
}

// bounder checks a parsed tree against Limits and resolves its aliases in
// place, counting each as the nodes it stands for: a tree of a few hundred
// nodes may expand to billions.
type bounder struct {
	r       *reader
	l       Limits
	nodes   int
	anchors map[string]*anchored // the latest anchor of each name, in file order
}

type anchored struct {
	node ast.Node // the anchored value
	ext  extent
	open bool // its value is being walked
}

// extent is the size of a node with its aliases expanded: how many nodes,
// and how many levels of mappings and lists.
type extent struct{ nodes, height int }

// walk measures n, found at depth d (the nesting of its parent), and
// returns what to put in its place: n, or for an alias the value it
// names. It returns false once a limit is passed, after reporting it.
func (b *bounder) walk(n ast.Node, d int) (ast.Node, extent, bool) {
	if n == nil {
		return nil, extent{}, true
	}
	if a, ok := n.(*ast.AliasNode); ok {
		return b.alias(a, d)
	}
	if !b.count(n) {
		return nil, extent{}, false
	}
	level := 0
	switch n.(type) {
	case *ast.MappingNode, *ast.SequenceNode, *ast.MappingValueNode: // a lone pair is a mapping of one key
		level = 1
		if d+1 > b.l.Depth {
			b.r.diags.tooDeep(b.r.pos(n), b.l)
			return nil, extent{}, false
		}
	}
	ext := extent{nodes: 1, height: level}
	ok := true
	// child walks c inside n and returns what to put in its place.
	child := func(c ast.Node) ast.Node {
		if !ok {
			return c
		}
		var ce extent
		c, ce, ok = b.walk(c, d+level)
		ext.nodes += ce.nodes
		ext.height = max(ext.height, ce.height+level)
		return c
	}
	// pair walks a key and its value; a key that is an alias must name a
	// single value.
	pair := func(mv *ast.MappingValueNode) {
		k := child(mv.Key)
		key, isKey := k.(ast.MapKeyNode)
		if _, scalar := unwrap(k).(ast.ScalarNode); ok && (!isKey || !scalar) {
			b.r.diags.Add(b.r.pos(mv.Key), CodeYAML, "write the key out", "a key must be a single value, not %s", describe(k))
			ok = false
		}
		if ok {
			mv.Key = key
		}
		mv.Value = child(mv.Value)
	}
	switch v := n.(type) {
	case *ast.MappingNode:
		for _, mv := range v.Values {
			if ok = ok && b.count(mv); ok {
				ext.nodes++
				pair(mv)
			}
		}
	case *ast.MappingValueNode:
		pair(v)
	case *ast.SequenceNode:
		for i := range v.Values {
			v.Values[i] = child(v.Values[i])
		}
	case *ast.TagNode:
		v.Value = child(v.Value)
	case *ast.MappingKeyNode:
		v.Value = child(v.Value)
	case *ast.AnchorNode:
		a := &anchored{node: v, open: true}
		b.anchors[scalarText(v.Name)] = a
		v.Value = child(v.Value)
		a.open, a.ext = false, ext
	}
	if !ok {
		return nil, extent{}, false
	}
	return n, ext, true
}

// count counts one node, and reports false past the limit.
func (b *bounder) count(n ast.Node) bool {
	b.nodes++
	if b.nodes > b.l.Nodes {
		b.r.diags.tooMany(b.r.pos(n), b.l, false)
		return false
	}
	return true
}

func (b *bounder) alias(n *ast.AliasNode, d int) (ast.Node, extent, bool) {
	name := scalarText(n.Value)
	a := b.anchors[name]
	switch {
	case a == nil:
		b.r.diags.Add(b.r.pos(n), CodeYAML, "define the anchor first (&"+name+" before the value), or write the value out",
			"alias *%s names no anchor before it", name)
		return nil, extent{}, false
	case a.open:
		b.r.diags.Add(b.r.pos(n), CodeYAML, "an alias names a value that ends before it; write this part out",
			"alias *%s is inside the value it names", name)
		return nil, extent{}, false
	}
	b.nodes += a.ext.nodes
	if b.nodes > b.l.Nodes {
		b.r.diags.tooMany(b.r.pos(n), b.l, true)
		return nil, extent{}, false
	}
	if d+a.ext.height > b.l.Depth {
		b.r.diags.tooDeep(b.r.pos(n), b.l)
		return nil, extent{}, false
	}
	return a.node, a.ext, true
}
