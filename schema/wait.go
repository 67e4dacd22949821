package schema

import (
	"regexp"
	"strings"
	"sync"
	"time"
)

// WaitSpec is a wait node: the run goes on after a time, or when an event
// comes (docs/waits.md). Exactly one of For, Until and Event is set.
type WaitSpec struct {
	Pos   Pos      // the wait: key's value
	For   Duration // wait: {for: D}
	Until String   // wait: {until: TIME or ${{ }}}
	Event String   // wait: {event: NAME}
	// Timeout bounds an event's wait; Default is taken when it passes
	// (without one the visit fails `timeout`).
	Timeout    Duration
	Default    any
	HasDefault bool
	DefaultPos Pos
	// Output is the type the event's data must fit (the node's output:).
	Output *Type
}

// eventNameRE is what an event's name may be: it is a part of a URL path
// and the name of a file in the run directory. It is compiled on first use:
// its {0,127} makes a large program, which package init would build in
// every flow process (docs/performance.md, start-up).
var eventNameRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
})

// ValidEventName reports whether s may name a wait's event.
func ValidEventName(s string) bool { return eventNameRE().MatchString(s) }

func (*WaitSpec) Kind() Kind          { return KindWait }
func (*WaitSpec) children() [][]*Node { return nil }

func (s *WaitSpec) field(r *reader, e entry, _ string) {
	switch e.key {
	case "output":
		s.Output = r.typeExpr(e.value, "output")
	case "wait":
		s.Pos = r.pos(e.value)
		es, _ := r.mapping(e.value, "wait", waitKeys)
		for _, w := range es {
			s.waitField(r, w)
		}
	}
}

func (s *WaitSpec) waitField(r *reader, w entry) {
	switch w.key {
	case "for":
		s.For = r.duration(w.value, "wait.for")
	case "until":
		s.Until = r.str(w.value, "wait.until")
		if v := s.Until.Value; s.Until.Set() && !strings.Contains(v, "${{") {
			if _, err := time.Parse(time.RFC3339, v); err != nil {
				r.errorf(w.value, CodeValue, "write an RFC 3339 time such as 2026-12-03T16:02:00+01:00, or a ${{ }} expression giving one", "wait.until %q is not a time", v)
			}
		}
	case "event":
		s.Event = r.str(w.value, "wait.event")
		if s.Event.Set() && !ValidEventName(s.Event.Value) {
			r.errorf(w.value, CodeValue, "event names are letters, digits, _, - and . (at most 128), not starting with - or .", "%q is not a valid event name", s.Event.Value)
		}
	case "timeout":
		s.Timeout = r.duration(w.value, "wait.timeout")
	case "default":
		s.Default, s.HasDefault, s.DefaultPos = r.plainValue(w.value), true, r.pos(w.value)
	}
}

func (s *WaitSpec) require(r *reader, at Pos, label string) {
	set := 0
	for _, b := range []bool{s.For.Set(), s.Until.Set(), s.Event.Set()} {
		if b {
			set++
		}
	}
	switch {
	case set == 0:
		r.diags.Add(at, CodeMissing, "give wait: {for: 10m}, {until: <RFC 3339 time>} or {event: <name>}", "%s says neither for, until nor event", label)
		return
	case set > 1:
		r.diags.Add(at, CodeValue, "a wait is for a time or for an event: give one of for, until and event", "%s gives more than one of for, until and event", label)
		return
	}
	if !s.Event.Set() {
		if s.Timeout.Set() || s.HasDefault {
			r.diags.Add(at, CodeKey, "timeout and default bound a wait for an event; a wait for a time has its own end", "%s waits for a time and takes no timeout or default", label)
		}
		if s.Output != nil {
			r.diags.Add(at, CodeKey, "output: types an event's data; remove it", "%s waits for a time and takes no output", label)
		}
		return
	}
	if s.HasDefault && !s.Timeout.Set() {
		r.diags.Add(s.DefaultPos, CodeMissing, "add timeout: <how long to wait>; the default is taken when it passes", "%s has a default but no timeout", label)
	}
	if s.HasDefault && s.Output != nil {
		if err := s.Output.Check(s.Default); err != nil {
			r.diags.Add(s.DefaultPos, CodeType, "make the default fit the output: type", "%s: default %v", label, err)
		}
	}
}
