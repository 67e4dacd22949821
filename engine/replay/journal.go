package replay

import "github.com/flowrun/flow/engine/record"

// Journal is what earlier attempts of a run recorded, as its walk reads
// it: the last end fact of each visit, and the tool calls of the turns
// that did not end. Ended is read-only once the walk starts.
type Journal struct {
	ended      map[string]*record.Fact
	mu         Locker // guards unfinished
	unfinished map[string][]record.ToolCall
}

// NewJournal indexes facts, those of the earlier attempts (nil: a fresh
// run); mu is the host's.
func NewJournal(facts []*record.Fact, mu Locker) *Journal {
	j := &Journal{mu: mu}
	if facts == nil {
		return j
	}
	j.ended = map[string]*record.Fact{}
	j.unfinished = record.Unfinished(facts)
	for _, f := range facts {
		if f.Type == record.FactEnd {
			j.ended[f.Visit] = f
		}
	}
	return j
}

// Ended is the last end fact of the visit at path, or nil.
func (j *Journal) Ended(path string) *record.Fact { return j.ended[path] }

// Unfinished takes the tool calls an earlier attempt of the visit at path
// left unended: the first turn after a resume gets them, once.
func (j *Journal) Unfinished(path string) []record.ToolCall {
	j.mu.Lock()
	defer j.mu.Unlock()
	earlier := j.unfinished[path]
	delete(j.unfinished, path)
	return earlier
}
