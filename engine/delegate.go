package engine

// Delegation is what a turn may hand to child agents (docs/delegation.md).
// A driver that finds one on its Turn offers the agent a tool named
// delegate.Tool (package steps/delegate), with two string parameters, "agent" (one of Agents) and
// "task"; each call is one DelegateRequest sent to Socket, answered by one
// DelegateReply, and the reply's Answer (or its Error, as an error result
// the model can read) is the tool's result. The host owns the socket and
// decides every call: limits, budgets and the child's visit are its, so a
// driver only carries calls across.
type Delegation struct {
	// Agents are who the turn may start, as the node declares them.
	Agents []string
	// Socket is the path of the run's delegation socket (a Unix socket).
	Socket string
	// Token names and authenticates this turn to the server: the server
	// knows which visit holds it, so a call cannot claim another parent.
	Token string
	// Server is the argv of the stdio MCP server that offers the tool to a
	// CLI driver (Claude Code, Codex): the flow binary and its arguments.
	// The driver starts nothing itself; it writes the CLI's configuration
	// so that the CLI starts Server with delegate.EnvSocket and
	// delegate.EnvToken set (package steps/delegate).
	Server []string
	// Bind ties the turn's calls to the process the driver started (its
	// group leader's pid, given as soon as it runs): only it and its
	// descendants may call (docs/delegation.md). openai calls in flow's process.
	Bind func(pid int) `json:"-"`
	// Restart is called by a LeafRunner that repeated the turn's recorded
	// calls and then runs the turn live after all (package reuse): the
	// live turn's calls that repeat them are answered by the children
	// already run, without a turn.
	Restart func() `json:"-"`
}

// DelegateRequest is one delegate call, one JSON line on the socket,
// after a first line that holds the token alone (the server checks it,
// and who is calling, before it reads the request).
type DelegateRequest struct {
	Token string `json:"token"`
	Agent string `json:"agent"`
	Task  string `json:"task"`
}

// DelegateReply answers one DelegateRequest, one JSON line back: the
// child's answer, or why there is none (a limit refused the call, the
// child failed), which the tool returns as its error result.
type DelegateReply struct {
	Answer string `json:"answer,omitempty"`
	Error  string `json:"error,omitempty"`
}
