package flows

import (
	"slices"
	"strings"

	"github.com/flowrun/flow/internal/ordered"
	"github.com/flowrun/flow/schema"
)

// checkDriver reports an agent's `driver:` that names no driver the program
// provides (Options.Drivers), at the driver's own position. The language
// only says a driver is a name; which names exist is the program's to say,
// so a driver added to a build needs no change here or in schema.
func (o Options) checkDriver(a *schema.AgentDoc, diags *schema.Diagnostics) {
	if o.Drivers == nil || !a.Driver.Set() || contains(o.Drivers, a.Driver.Value) {
		return
	}
	hint := schema.DidYouMean(a.Driver.Value, o.Drivers)
	switch {
	case hint != "":
	case len(o.Drivers) == 0:
		hint = "this program provides no agent drivers"
	default:
		hint = "drivers are " + strings.Join(o.Drivers, ", ")
	}
	diags.Add(a.Driver.Pos, schema.CodeDriver, hint, "unknown driver %q", a.Driver.Value)
}

// knowsDriver reports whether an agent's resolved driver (its own or the
// default) is one the program provides; true when Options.Drivers is nil.
func (o Options) knowsDriver(name string) bool {
	return o.Drivers == nil || contains(o.Drivers, name)
}

// checkTools reports each tool of an agent that the driver running it does
// not have (Options.DriverTools), at the tool's position: an agent file
// written for Claude Code that lists WebFetch cannot run on pi as written.
func (o Options) checkTools(a *schema.AgentDoc, driver string, diags *schema.Diagnostics) {
	names, ok := o.DriverTools[driver]
	if !ok || names == nil {
		return
	}
	for _, t := range a.Tools {
		if _, ok := names[strings.ToLower(strings.TrimSpace(t.Value))]; ok {
			continue
		}
		own := make([]string, 0, len(names))
		for _, t := range ordered.Keys(names) {
			own = append(own, names[t])
		}
		slices.Sort(own)
		own = slices.Compact(own)
		diags.Add(t.Pos, schema.CodeTool,
			"remove it, or run the agent on a driver that has it (driver: claude); "+driver+"'s tools are "+strings.Join(own, ", "),
			"agent %q runs on %s, which has no tool %q", a.Name.Value, driver, t.Value)
	}
}
