package engine

// A turn that starts over within one attempt (docs/delegation.md, "Reuse
// and flow test"): a recorded answer whose children, repeated, answer
// otherwise than when it was recorded is not taken, and the turn runs
// live. The children it already ran in this attempt are not run again:
// the live turn's calls that repeat them (the same agent and task, the
// nth repeat matching the nth such child) are answered with what they
// answered, as a resumed turn's calls are answered from the journal.

// answeredKids are the children a visit's turns ran in this attempt.
type answeredKids struct {
	made    []earlierChild           // in the order they ended
	answers map[string]DelegateReply // what each answered, by path
}

// answered is what the child at path answered earlier in this attempt,
// if it ran.
func (d *delegator) answered(path string) (DelegateReply, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.again == nil {
		return DelegateReply{}, false
	}
	reply, ok := d.again.answers[path]
	return reply, ok
}

// keep remembers what the child at path, started for req, answered, and
// returns it.
func (d *delegator) keep(path string, req DelegateRequest, reply DelegateReply) DelegateReply {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.again == nil {
		d.again = &answeredKids{answers: map[string]DelegateReply{}}
	}
	if _, seen := d.again.answers[path]; !seen {
		d.again.made = append(d.again.made, earlierChild{path: path, agent: req.Agent, task: req.Task})
	}
	d.again.answers[path] = reply
	return reply
}

// restart lets the visit's next turn repeat the calls of the one before:
// the children run so far become the recorded ones its calls match.
func (d *delegator) restart() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.again == nil {
		return
	}
	known := map[string]bool{}
	for _, c := range d.recorded {
		known[c.path] = true
	}
	for _, c := range d.again.made {
		if !known[c.path] {
			d.recorded = append(d.recorded, c)
		}
	}
	d.repeats = map[[2]string]int{}
}
