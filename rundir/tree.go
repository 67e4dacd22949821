package rundir

import "strings"

// Nested is a visit with its depth below the run: how `flow show` lays
// visits out.
type Nested struct {
	Visit
	Depth int
}

// Tree orders visits under their parents, by path: each visit follows its
// parent, and siblings keep the order they started in. The journal's order
// alone interleaves what ran at once (map items, parallel branches), so a
// visit would read as the child of whichever block started just before it.
func Tree(visits []Visit) []Nested {
	index := make(map[string]int, len(visits))
	for i, v := range visits {
		index[v.Start.Visit] = i
	}
	children := make(map[int][]int, len(visits)) // -1: the run itself
	for i, v := range visits {
		children[parentOf(v.Start.Visit, index)] = append(children[parentOf(v.Start.Visit, index)], i)
	}
	out := make([]Nested, 0, len(visits))
	var walk func(parent, depth int)
	walk = func(parent, depth int) {
		for _, i := range children[parent] {
			out = append(out, Nested{Visit: visits[i], Depth: depth})
			walk(i, depth+1)
		}
	}
	walk(-1, 0)
	return out
}

// parentOf finds the nearest enclosing visit of path: the path with its
// last segment cut, and that segment's iteration (#n) or item ([n]) cut,
// until a visit has that path. -1 when none does.
func parentOf(path string, index map[string]int) int {
	for {
		i := strings.LastIndexByte(path, '/')
		if i < 0 {
			return -1
		}
		path = path[:i]
		if j, ok := index[path]; ok {
			return j
		}
		if k := strings.LastIndexAny(path, "#["); k > strings.LastIndexByte(path, '/') {
			if j, ok := index[path[:k]]; ok {
				return j
			}
		}
	}
}
