package schema

import "github.com/goccy/go-yaml/ast"

// branch reads one branch of a choice: `when` with `do`, or `else` on
// its own (docs/flow-files.md, choice).
func (r *reader) branch(n ast.Node) *Branch {
	es, ok := r.mapping(n, "a choice branch", []string{"when", "do", "else"})
	if !ok {
		return nil
	}
	b := &Branch{Pos: r.pos(n)}
	hasDo := false
	for _, e := range es {
		switch e.key {
		case "when":
			b.When = r.str(e.value, "when")
		case "do":
			hasDo = true
			b.Do = r.sequence(e.value, "do")
		case "else":
			b.Else = true
			b.Do = r.sequence(e.value, "else")
		}
	}
	switch {
	case b.Else && (b.When.Set() || hasDo):
		r.errorf(n, CodeBranch, "an else branch is `- else: [nodes]` on its own", "else cannot have when: or do:")
	case !b.Else && !b.When.Set():
		r.errorf(n, CodeBranch, "give when: <guard>, or write `- else: [nodes]`", "the branch has no when")
	case !b.Else && !hasDo:
		r.errorf(n, CodeBranch, "add do: with the nodes to run when the guard holds", "the branch has no do")
	}
	return b
}
