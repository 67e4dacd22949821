package engine

import "github.com/flowrun/flow/engine/record"

// toolLog is the tool-call journal of a turn of visit path: the first
// turn after a resume takes the calls its earlier attempt left unended.
func (r *runner) toolLog(path string) *record.ToolLog {
	r.mu.Lock()
	earlier := r.unfinished[path]
	delete(r.unfinished, path)
	r.mu.Unlock()
	return &record.ToolLog{Earlier: earlier, Record: func(c record.ToolCall) error {
		return r.dir.Fact(record.ToolCalled{Time: r.rt.Now(), Visit: path, Tool: c}.Fact())
	}}
}
