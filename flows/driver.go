package flows

import (
	"strings"

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
