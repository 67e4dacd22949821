// Package flows loads and checks a flow file into a compiled Plan: agents
// resolved from the catalogue (docs/flow-files.md, Agents) with their drivers checked against
// the names the program provides (Options.Drivers), called flows loaded from
// beside the caller with call cycles refused, bounds checked, and every
// guard, template and read compiled with expr-lang/expr against the types
// that each node's declared output gives, so a typo or a boolean compared
// with a string is a load error at its column — before a token is spent.
//
// Load returns every problem at once, as schema.Diagnostics; a Plan comes
// back only when there is no error. A Plan and its compiled programs are
// immutable and safe to share between goroutines. flows never imports the
// engine: `flow validate` needs no runtime.
package flows
