package schema

// VisitKey is what determines one visit's outcome: its key, the hash of
// its parts, and each part's own hash, so that a miss can name the first
// part that differs.
//
// It is defined here, beside the language, because two layers share its
// shape: flows computes it and the run directory's journal keeps it.
type VisitKey struct {
	Key   string            `json:"key"`
	Parts map[string]string `json:"parts"`
	// Prompt is the turn text the prompt part hashes, with this run's
	// paths replaced: a miss shows where it differs.
	Prompt string `json:"prompt,omitempty"`
	// Isolated says the visit ran in an isolated scope: its outcome is a
	// commit too, so flow run --reuse runs it again (flow test answers
	// its turn offline and lands what the turn leaves, docs/reuse-and-tests.md).
	Isolated bool `json:"isolated,omitempty"`
}
