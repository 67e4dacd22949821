package agentcli

import (
	"fmt"
	"strings"

	"github.com/flowrun/flow/engine"
)

// namedMalformed is how many lines that are not JSON events Notes names;
// the rest are only counted, so that a CLI printing plain text does not
// bury the diagnostics that matter.
const namedMalformed = 3

// Notes are the diagnostics a driver notes while it reads a CLI's JSON
// event stream, in the order met, so that they read like the stream: the
// driver's own remarks (a retry, a denied tool), the first lines that are
// not JSON events, by number, and each event type the driver does not know,
// once. Its zero value is not usable; call NewNotes.
type Notes struct {
	cli       string
	list      []string
	malformed int
	unknown   map[string]bool
}

// NewNotes returns empty Notes on the stream of cli ("pi", "claude").
func NewNotes(cli string) *Notes {
	return &Notes{cli: cli, unknown: map[string]bool{}}
}

// Add notes a remark.
func (n *Notes) Add(format string, args ...any) {
	n.list = append(n.list, fmt.Sprintf(format, args...))
}

// Malformed notes that line number line, text, is not a JSON event.
func (n *Notes) Malformed(line int, text []byte) {
	n.malformed++
	if n.malformed <= namedMalformed {
		n.Add("line %d of %s's output is not a JSON event: %s", line, n.cli, excerpt(string(text)))
	}
}

// MalformedLines returns how many lines were not JSON events: a stream
// with any is not well-formed.
func (n *Notes) MalformedLines() int { return n.malformed }

// Unknown notes an event type the driver does not know, unless it was noted
// before. Such events are ignored: a newer CLI may add some.
func (n *Notes) Unknown(line int, typ string) {
	if !n.unknown[typ] {
		n.unknown[typ] = true
		n.Add("line %d: unknown %s event %q (ignored)", line, n.cli, typ)
	}
}

// List returns a copy of the notes, closed by the count of the lines that
// were not JSON events and not named.
func (n *Notes) List() []string {
	out := append([]string(nil), n.list...)
	if n.malformed > namedMalformed {
		out = append(out, fmt.Sprintf("%d more lines were not JSON events", n.malformed-namedMalformed))
	}
	return out
}

func excerpt(s string) string {
	const most = 120
	s = strings.TrimSpace(s)
	if len(s) > most {
		s = strings.ToValidUTF8(s[:most], "") + "…"
	}
	return fmt.Sprintf("%q", s)
}

// Activity turns what a CLI's events say the agent is doing into the turn's
// progress line. It reports changes only: a stream sends many deltas of one
// kind in a row. Its zero value is not usable; call NewActivity.
type Activity struct {
	// Tokens is the count the next report carries.
	Tokens int64

	progress func(engine.Progress)
	doing    string
}

// NewActivity returns an Activity that reports to progress (nil: nowhere).
func NewActivity(progress func(engine.Progress)) *Activity {
	if progress == nil {
		progress = func(engine.Progress) {}
	}
	return &Activity{progress: progress}
}

// Report reports doing, unless it is what was reported last.
func (a *Activity) Report(doing string) {
	if doing == a.doing {
		return
	}
	a.doing = doing
	a.Update()
}

// Update reports the current activity again, with Tokens: the count
// changed.
func (a *Activity) Update() {
	a.progress(engine.Progress{Activity: a.doing, Tokens: a.Tokens})
}

// Forget makes the next Report report even an unchanged activity: the same
// tool used twice is two uses.
func (a *Activity) Forget() { a.doing = "" }
