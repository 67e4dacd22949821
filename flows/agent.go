package flows

import "github.com/flowrun/flow/schema"

// Agent is an agent definition as resolved for a run: a catalogue file's
// frontmatter and body, or an inline declaration. It is immutable once loaded
// and safe to share between goroutines.
type Agent struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Driver      string   `json:"driver"`             // a registered driver: pi, claude, codex, openai, exec, …
	Model       string   `json:"model,omitempty"`    // the frontmatter's model; see Plan for precedence
	Thinking    string   `json:"thinking,omitempty"` // passed to drivers that support it
	Tools       []string `json:"tools,omitempty"`    // allowlist; nil means the read-only set
	Command     []string `json:"command,omitempty"`  // exec driver: the argv that answers a turn
	BaseURL     string   `json:"base_url,omitempty"` // openai driver: the server
	APIKeyEnv   string   `json:"api_key_env,omitempty"`
	// MaxSteps bounds a native agent's requests per turn (0: the
	// driver's default); Sandbox is "on", "off" or "" (docs/native.md).
	MaxSteps int    `json:"max_steps,omitempty"`
	Sandbox  string `json:"sandbox,omitempty"`
	// Instructions is the Markdown body: the agent's system prompt.
	Instructions string `json:"instructions"`
	// Scope says where the definition came from: builtin, user, flow, project or inline.
	Scope string `json:"scope"`
	// Source is the file it was read from: the flow file for an inline
	// agent, "" for a builtin one.
	Source string `json:"source,omitempty"`
	// Delegate is the agent file's default delegation, for a node that
	// names the agent and gives none (docs/delegation.md).
	Delegate *Delegate  `json:"delegate,omitempty"`
	Pos      schema.Pos `json:"-"`
}
