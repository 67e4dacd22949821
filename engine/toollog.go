package engine

import "github.com/flowrun/flow/engine/record"

// toolLog is the tool-call journal of a turn of visit path
// (Turn.Tools): each call becomes a tool fact, and the visit's first turn
// after a resume gets the calls its earlier attempt recorded and did not
// end.
func (r *runner) toolLog(path string) *ToolLog {
	r.mu.Lock()
	earlier := r.unfinished[path]
	delete(r.unfinished, path)
	r.mu.Unlock()
	return &ToolLog{Earlier: earlier, Record: func(c record.ToolCall) error {
		return r.dir.Fact(record.ToolCalled{Time: r.rt.Now(), Visit: path, Call: c}.Fact())
	}}
}
