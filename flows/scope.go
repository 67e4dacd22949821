package flows

import (
	"github.com/expr-lang/expr/types"

	"github.com/flowrun/flow/schema"
)

// scope is the typed environment an expression is compiled against: what is
// in lexical scope at that point of the flow (docs/flow-files.md, Expressions and addresses). It is a persistent
// list, newest name first: each node extends its sequence's scope without
// copying it. An entry whose depth d (counted from 1) is a multiple of
// indexEvery also indexes the block of names below it, from depth
// d-lowbit(d)+1 to d, and points past that block (as a Fenwick tree
// does): a lookup walks fewer than indexEvery entries, then jumps at most
// log2(depth) blocks, and building every index costs O(n log n). A single
// index of every name above, copied every indexEvery entries, made checking
// a long sequence quadratic (4 MB of nodes took 20 times as long as 1 MB).
type scope struct {
	parent *scope
	name   string
	t      *schema.Type
	depth  int                     // from 1
	index  map[string]*schema.Type // the block this entry indexes, or nil
	below  *scope                  // the entry just below the block
}

const indexEvery = 32

func (s *scope) with(name string, t *schema.Type) *scope {
	n := &scope{parent: s, name: name, t: t, depth: 1}
	if s != nil {
		n.depth = s.depth + 1
	}
	if block := n.depth & -n.depth; block >= indexEvery {
		n.index = make(map[string]*schema.Type, block)
		p := n
		for i := 0; i < block; i, p = i+1, p.parent {
			if _, shadowed := n.index[p.name]; !shadowed {
				n.index[p.name] = p.t // the newest binding of a name wins
			}
		}
		n.below = p
	}
	return n
}

// lookup finds the innermost binding of name.
func (s *scope) lookup(name string) (*schema.Type, bool) {
	for p := s; p != nil; {
		if p.index != nil {
			if t, ok := p.index[name]; ok {
				return t, true
			}
			p = p.below
			continue
		}
		if p.name == name {
			return p.t, true
		}
		p = p.parent
	}
	return nil, false
}

// names lists every name in scope, for "did you mean".
func (s *scope) names() []string {
	var out []string
	for p := s; p != nil; p = p.parent {
		out = append(out, p.name)
	}
	return out
}

// env is the part of the scope that src can name. Giving expr only those
// names keeps compiling one expression proportional to the expression, not
// to the flow: expr converts its whole environment on every compile, which
// made loading quadratic in the number of nodes. A name src uses that is
// not in scope is still reported by expr as unknown.
func (s *scope) env(src string, x *compiler) types.Map {
	m := types.Map{}
	for i := 0; i < len(src); {
		if !identStart(src[i]) {
			i++
			continue
		}
		j := i + 1
		for j < len(src) && (identStart(src[j]) || '0' <= src[j] && src[j] <= '9') {
			j++
		}
		name := src[i:j]
		// x.output: a field, not a name; but 1..n is a range over the name n.
		field := i > 0 && src[i-1] == '.' && (i < 2 || src[i-2] != '.')
		i = j
		if field {
			continue
		}
		if t, ok := s.lookup(name); ok {
			if _, done := m[name]; !done {
				m[name] = x.typeOf(t)
			}
		}
	}
	return m
}

func identStart(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' }
