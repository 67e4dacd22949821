package main

import (
	"fmt"

	"github.com/flowrun/flow/flows"
)

// describeWait says a wait as `flow plan` shows it: what it waits for,
// and an event's timeout and default.
func describeWait(w *flows.WaitNode) string {
	switch {
	case w.For > 0:
		return "wait for " + w.For.String()
	case w.Until != nil:
		return "wait until " + w.Until.Source
	}
	s := "wait for event " + w.Event
	if w.Timeout > 0 {
		s += fmt.Sprintf(" (timeout %s", w.Timeout)
		if w.HasDefault {
			s += ", then its default"
		} else {
			s += ", then fails timeout"
		}
		s += ")"
	}
	if w.OutputSchema != nil {
		s += ", typed"
	}
	return s
}
