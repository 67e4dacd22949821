package delegate

// Tool is the delegate tool's name on every driver (docs/delegation.md).
const Tool = "delegate"

// The environment that carries a turn's delegation to a process the turn
// starts: an exec agent's program, or the MCP server a CLI starts.
const (
	EnvSocket = "FLOW_DELEGATE_SOCKET"
	EnvToken  = "FLOW_DELEGATE_TOKEN"
)
