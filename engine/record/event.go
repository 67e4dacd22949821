package record

import (
	"time"

	"github.com/flowrun/flow/schema"
)

// EventType names an event of events.jsonl and of the live view.
type EventType string

// The event types.
const (
	EventRunStart      EventType = "run.start"
	EventRunEnd        EventType = "run.end"
	EventVisitStart    EventType = "visit.start"
	EventVisitEnd      EventType = "visit.end"
	EventVisitReplayed EventType = "visit.replayed" // a resume kept an ended visit's outcome
	EventProgress      EventType = "progress"
	EventNote          EventType = "note" // something the person running it should know, in Message
)

// Event is one line of events.jsonl, and what the live view receives.
type Event struct {
	Time     time.Time   `json:"time"`
	Type     EventType   `json:"type"`
	Run      string      `json:"run,omitempty"`
	Visit    string      `json:"visit,omitempty"`
	Node     string      `json:"node,omitempty"`
	Kind     schema.Kind `json:"kind,omitempty"`
	Agent    string      `json:"agent,omitempty"` // an agent visit's agent, on visit.end
	Driver   string      `json:"driver,omitempty"`
	Model    string      `json:"model,omitempty"`
	Activity string      `json:"activity,omitempty"`
	Tokens   int64       `json:"tokens,omitempty"`
	OK       *bool       `json:"ok,omitempty"`
	Error    *Failure    `json:"error,omitempty"`
	Usage    *Usage      `json:"usage,omitempty"`
	WallMS   int64       `json:"wall_ms,omitempty"`
	Status   Status      `json:"status,omitempty"`
	Dir      string      `json:"dir,omitempty"`
	Message  string      `json:"message,omitempty"`
	// Overspend, on run.end, is the run end fact's.
	Overspend []Overspend `json:"overspend,omitempty"`
	// Wait, on visit.waiting, is what the visit waits for.
	Wait *Wait `json:"wait,omitempty"`
}
