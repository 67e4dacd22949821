package delegation

// A turn that starts over within one attempt (docs/delegation.md, "Reuse
// and flow test"): a recorded answer whose children, repeated, answer
// otherwise than when it was recorded is not taken, and the turn runs
// live. The children it already ran in this attempt are not run again:
// the live turn's calls that repeat them (the same agent and task, the
// nth repeat matching the nth such child) are answered with what they
// answered, as a resumed turn's calls are answered from the journal.

// Answer is what a child answered: its answer, or why there is none.
type Answer struct{ Text, Error string }

// answered are the children a visit's turns ran in this attempt.
type answered struct {
	made    []Child           // in the order they ended
	answers map[string]Answer // by path
}

// Answered is what the child at path answered earlier in this attempt,
// if it ran.
func (p *Parent) Answered(path string) (Answer, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.again == nil {
		return Answer{}, false
	}
	a, ok := p.again.answers[path]
	return a, ok
}

// Keep remembers what the child at path, started for agent and task,
// answered.
func (p *Parent) Keep(path, agent, task string, a Answer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.again == nil {
		p.again = &answered{answers: map[string]Answer{}}
	}
	if _, seen := p.again.answers[path]; !seen {
		p.again.made = append(p.again.made, Child{Path: path, Agent: agent, Task: task})
	}
	p.again.answers[path] = a
}

// Restart lets the visit's next turn repeat the calls of the one before:
// the children run so far become the recorded ones its calls match.
func (p *Parent) Restart() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.again == nil {
		return
	}
	known := map[string]bool{}
	for _, c := range p.recorded {
		known[c.Path] = true
	}
	for _, c := range p.again.made {
		if !known[c.Path] {
			p.recorded = append(p.recorded, c)
		}
	}
	p.repeats = map[[2]string]int{}
}
