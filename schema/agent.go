package schema

import (
	"bytes"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// AgentDoc is an agent definition as written: the YAML frontmatter of an
// agent Markdown file (the pi and Claude Code convention) and its body, or an
// inline agent mapping in a flow.
type AgentDoc struct {
	Pos         Pos
	Name        String
	Description String
	Driver      String // a name; flows checks it against the drivers the program provides
	Model       String
	Thinking    String
	Tools       []String
	ToolsSet    bool
	Command     []String
	BaseURL     String
	APIKeyEnv   String
	// MaxSteps bounds a native agent's requests per turn; Sandbox is
	// "on" or "off" (docs/native.md).
	MaxSteps     Int
	Sandbox      String
	Instructions string
	// Delegate is the agent's default delegation (docs/delegation.md).
	Delegate *Delegate
}

// ParseAgentFile decodes an agent Markdown file: frontmatter between `---`
// lines, then the body as the agent's instructions. Keys that other tools put
// in frontmatter (color, …) are ignored, so existing agent files work unchanged.
func ParseAgentFile(file string, src []byte) (*AgentDoc, Diagnostics) {
	return Limits{}.ParseAgentFile(file, src)
}

// ParseAgentFile decodes an agent Markdown file within l.
func (l Limits) ParseAgentFile(file string, src []byte) (*AgentDoc, Diagnostics) {
	var diags Diagnostics
	a := &AgentDoc{Pos: Pos{File: file, Line: 1, Col: 1}}
	text := bytes.ReplaceAll(stripBOM(src), []byte("\r\n"), []byte("\n"))
	if !bytes.HasPrefix(text, []byte("---\n")) {
		diags.Add(a.Pos, CodeFrontmatter, "start the file with a --- line, then name: and description:, then ---", "the agent file has no YAML frontmatter")
		return a, diags
	}
	rest := text[4:]
	end := bytes.Index(rest, []byte("\n---"))
	if end < 0 {
		diags.Add(a.Pos, CodeFrontmatter, "close the frontmatter with a --- line", "the agent file's frontmatter is not closed")
		return a, diags
	}
	front := rest[:end+1]
	body := rest[end+4:]
	if i := bytes.IndexByte(body, '\n'); i >= 0 {
		body = body[i+1:]
	} else {
		body = nil
	}
	// Keep positions true to the file: pad the frontmatter with one blank line
	// for the opening ---.
	padded := append([]byte("\n"), front...)
	r := &reader{file: file, diags: &diags, src: padded}
	node := r.parse(l)
	if node == nil {
		return a, diags
	}
	r.agentFields(a, node, false)
	a.Instructions = strings.TrimSpace(string(body))
	return a, diags
}

func (r *reader) inlineAgent(n ast.Node) *AgentDoc {
	a := &AgentDoc{Pos: r.pos(n)}
	r.agentFields(a, n, true)
	return a
}

func (r *reader) agentFields(a *AgentDoc, n ast.Node, strict bool) {
	var known []string
	if strict {
		known = agentKeys
	}
	es, ok := r.mapping(n, "an agent", known)
	if !ok {
		return
	}
	for _, e := range es {
		switch e.key {
		case "name":
			a.Name = r.str(e.value, "name")
		case "description":
			a.Description = r.str(e.value, "description")
		case "driver":
			a.Driver = r.str(e.value, "driver")
		case "model":
			a.Model = r.str(e.value, "model")
		case "thinking":
			a.Thinking = r.str(e.value, "thinking")
		case "tools":
			a.ToolsSet = true
			if isScalar(e.value) {
				s := r.str(e.value, "tools")
				for _, t := range strings.Split(s.Value, ",") {
					if t = strings.TrimSpace(t); t != "" {
						a.Tools = append(a.Tools, String{Value: t, Pos: s.Pos})
					}
				}
			} else {
				a.Tools = r.strings(e.value, "tools")
			}
		case "command":
			if isScalar(e.value) {
				r.errorf(e.value, "type", "write the argv as a list: [./bin/agent.sh, --flag]", "command must be a list of arguments")
			} else {
				a.Command = r.strings(e.value, "command")
			}
		case "base_url":
			a.BaseURL = r.str(e.value, "base_url")
		case "api_key_env":
			a.APIKeyEnv = r.str(e.value, "api_key_env")
		case "max_steps":
			a.MaxSteps = r.integer(e.value, "max_steps", 1)
		case "sandbox":
			a.Sandbox = r.sandbox(e.value)
		case "instructions":
			a.Instructions = r.str(e.value, "instructions").Value
		case "delegate":
			a.Delegate = r.delegate(e.value)
		}
	}
	switch name := a.Name.Value; {
	case name == "":
		r.errorf(n, "missing", "add name: (unique in the catalogue)", "the agent has no name")
	case name == "." || name == ".." || strings.ContainsAny(name, "/\\\x00"):
		r.diags.Add(a.Name.Pos, "name", "an agent's name names its files in a run directory; use letters, digits, - and _", "agent name %q is not a valid file name", name)
	}
	if !a.Description.Set() {
		r.errorf(n, "missing", "add description: (one line saying what it does)", "agent %q has no description", a.Name.Value)
	}
	if a.Driver.Value == "exec" && len(a.Command) == 0 {
		r.errorf(n, "missing", "add command: [program, args…]; the turn arrives on stdin, the answer is stdout", "exec agent %q has no command", a.Name.Value)
	}
}

// sandbox reads an agent's sandbox: on or off (a YAML boolean too).
func (r *reader) sandbox(n ast.Node) String {
	s := r.str(n, "sandbox")
	switch strings.ToLower(s.Value) {
	case "on", "true", "yes":
		s.Value = "on"
	case "off", "false", "no":
		s.Value = "off"
	default:
		r.diags.Add(s.Pos, CodeType, "write sandbox: on or sandbox: off", "sandbox is %q, not on or off", s.Value)
	}
	return s
}
