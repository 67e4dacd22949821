// Package ordered walks maps in a fixed order. Code that runs inside a
// Temporal workflow (flows.Reload, the engine's walk) must not depend on Go's
// random map order; workflowcheck flags every range over a map, so such code
// takes a map's keys from here, sorted, and the one range that collects them
// is the one the checker is told to trust (docs/decisions.md, "A pure
// walker").
package ordered

import (
	"cmp"
	"slices"
)

// Keys returns m's keys, sorted.
func Keys[M ~map[K]V, K cmp.Ordered, V any](m M) []K {
	keys := make([]K, 0, len(m))
	//workflowcheck:ignore the keys are sorted before they are returned: no order escapes
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
