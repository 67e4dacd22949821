package flows

import "time"

// The bounds that hold when nothing else sets one (docs/flow-files.md, Node kinds and agent).
const (
	DefaultTurnTimeout = 30 * time.Minute // an agent turn
	DefaultRunTimeout  = 10 * time.Minute // a run node's command
)

// Settings are the run-wide overrides that take precedence over the flow
// files (docs/flow-files.md, agent): the command line's --model and --timeout, a sweep
// cell's models, and the configuration's default bound on a turn. The
// engine and `flow plan` resolve models and timeouts through the same
// methods, so what the plan shows is what a run does.
type Settings struct {
	Model string // --model, or a sweep cell's model: every agent on this model
	// Models are a sweep cell's models by agent name (--assign): each wins
	// over everything else for its agent, Model included, so that nothing
	// pinned in a flow or an agent file leaks into a comparison (docs/sweeps.md).
	Models      map[string]string
	Timeout     time.Duration // --timeout: the bound on every turn
	TurnTimeout time.Duration // the configuration's `timeout`; 0 means DefaultTurnTimeout
}

// Calls is the chain of flows a node runs in: its own flow, then the flow
// that called it, and so on up to the run's root.
type Calls struct {
	Flow   *Flow
	Caller *Calls
}

// Call returns the chain inside a call of f from c.
func (c *Calls) Call(f *Flow) *Calls { return &Calls{Flow: f, Caller: c} }

// ResolveModel resolves the model of a turn of agent a in c (docs/flow-files.md, agent): a
// sweep cell's model for the agent, --model, then in the agent's flow its
// `models:` entry and then its `model:`, then the same in each calling
// flow, then the agent's own; "" leaves it to the driver.
func (s Settings) ResolveModel(c *Calls, a *Agent) string {
	if m := s.Models[a.Name]; m != "" {
		return m
	}
	if s.Model != "" {
		return s.Model
	}
	for ; c != nil; c = c.Caller {
		if m := c.Flow.Models[a.Name]; m != "" {
			return m
		}
		if c.Flow.Model != "" {
			return c.Flow.Model
		}
	}
	return a.Model
}

// ResolveTimeout resolves the bound on one turn of agent node n in c:
// --timeout, the node's, the flow's, each calling flow's, the
// configuration's, then DefaultTurnTimeout.
func (s Settings) ResolveTimeout(c *Calls, n *Node) time.Duration {
	if s.Timeout > 0 {
		return s.Timeout
	}
	if n.Timeout > 0 {
		return n.Timeout
	}
	for ; c != nil; c = c.Caller {
		if c.Flow.Timeout > 0 {
			return c.Flow.Timeout
		}
	}
	if s.TurnTimeout > 0 {
		return s.TurnTimeout
	}
	return DefaultTurnTimeout
}

// RunTimeout is the bound on a run node's command: its own, else
// DefaultRunTimeout.
func RunTimeout(n *Node) time.Duration {
	if n.Timeout > 0 {
		return n.Timeout
	}
	return DefaultRunTimeout
}
