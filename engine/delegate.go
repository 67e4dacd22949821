package engine

// Delegation is what a turn may hand to child agents (docs/delegation.md).
// A driver that finds one on its Turn offers the agent a tool named
// DelegateTool, with two string parameters, "agent" (one of Agents) and
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
	// so that the CLI starts Server with EnvDelegateSocket and
	// EnvDelegateToken set.
	Server []string
	// Bind, when set, ties the turn's calls to the process the driver
	// started for the turn: the driver calls it with that process's id
	// (the leader of its process group) as soon as it runs. The server
	// then answers only calls made by that process or its descendants
	// (docs/delegation.md). A driver that makes its calls itself, in
	// flow's process (openai), calls nothing.
	Bind func(pid int) `json:"-"`
}

// DelegateTool is the tool's name on every driver.
const DelegateTool = "delegate"

// The environment that carries a turn's delegation to a process the turn
// starts: an exec agent's program, or the MCP server a CLI starts.
const (
	EnvDelegateSocket = "FLOW_DELEGATE_SOCKET"
	EnvDelegateToken  = "FLOW_DELEGATE_TOKEN"
)

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
