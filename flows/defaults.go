package flows

// The defaults a run takes when neither the command line, the
// configuration nor the flow file says otherwise, each in this one place.
const (
	// DefaultDriver is the driver of agents whose file names none, and the
	// configuration's `driver` unless it says otherwise.
	DefaultDriver = "pi"
	// DefaultConcurrency caps the agent turns alive at once in a run (or
	// across a sweep's cells) when neither the configuration nor the
	// flow's `concurrency:` does.
	DefaultConcurrency = 8
)

// Concurrency is the cap on live agent turns of a run of p: n when it is
// positive (the configuration's `concurrency`), else the root flow's
// `concurrency:`, else DefaultConcurrency.
func (p *Plan) Concurrency(n int) int {
	switch {
	case n > 0:
		return n
	case p.Root.Concurrency > 0:
		return p.Root.Concurrency
	}
	return DefaultConcurrency
}
