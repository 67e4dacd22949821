package flows

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/flowrun/flow/flows/osdisk"
)

// TestResolveModelPrecedence holds ResolveModel to docs/flow-files.md, agent: a sweep cell's
// model for the agent > --model > the flow's models: entry > the flow's
// model: > a calling flow's (models:, then model:) > the agent's own.
func TestResolveModelPrecedence(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"caller.yaml": `name: caller
model: caller-model
models: {pinned: caller-pin}
agents:
  - {name: pinned, description: d, driver: exec, model: agent-model, command: [cat]}
  - {name: plain, description: d, driver: exec, command: [cat]}
  - {name: own, description: d, driver: exec, model: own-model, command: [cat]}
nodes:
  - {id: a, agent: plain, prompt: x}
  - {id: b, agent: pinned, prompt: x}
  - {id: c, flow: callee}
`,
		"callee.yaml": `name: callee
models: {plain: callee-pin}
nodes:
  - {id: d, agent: plain, prompt: x}
  - {id: e, agent: pinned, prompt: x}
  - {id: f, flow: leaf}
`,
		"leaf.yaml": `name: leaf
nodes:
  - {id: g, agent: own, prompt: x}
  - {id: h, agent: pinned, prompt: x}
`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, diags := Load(filepath.Join(dir, "caller.yaml"), Options{Disk: osdisk.OS, UserAgentDirs: []string{}, Drivers: testDrivers})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	caller := &Calls{Flow: p.Root}
	callee := caller.Call(p.Flows["callee"])
	leaf := callee.Call(p.Flows["leaf"])
	agent := func(name string) *Agent { return p.Agents[name] }
	tests := []struct {
		name     string
		settings Settings
		calls    *Calls
		agent    string
		want     string
	}{
		{"the flow's model", Settings{}, caller, "plain", "caller-model"},
		{"models: beats model: and the agent's own", Settings{}, caller, "pinned", "caller-pin"},
		{"a called flow's models: entry", Settings{}, callee, "plain", "callee-pin"},
		{"a calling flow's models: entry", Settings{}, callee, "pinned", "caller-pin"},
		{"a calling flow's model: beats the agent's own", Settings{}, leaf, "own", "caller-model"},
		{"--model beats models:", Settings{Model: "cli"}, caller, "pinned", "cli"},
		{"--model beats a callee's models:", Settings{Model: "cli"}, callee, "plain", "cli"},
		{"a sweep cell's agent model beats --model", Settings{Model: "cli", Models: map[string]string{"pinned": "cell"}}, leaf, "pinned", "cell"},
		{"a sweep cell's agent model leaves other agents", Settings{Models: map[string]string{"pinned": "cell"}}, leaf, "own", "caller-model"},
		{"an empty cell model is absent", Settings{Models: map[string]string{"plain": ""}}, caller, "plain", "caller-model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.settings.ResolveModel(tt.calls, agent(tt.agent)); got != tt.want {
				t.Errorf("ResolveModel = %q, want %q", got, tt.want)
			}
		})
	}
	p.Root.Model = ""
	if got := (Settings{}).ResolveModel(&Calls{Flow: p.Flows["leaf"]}, agent("own")); got != "own-model" {
		t.Errorf("with no flow setting it, the agent's own model: got %q", got)
	}
}

func TestParseLabel(t *testing.T) {
	tests := []struct {
		in, want string
		bad      bool
	}{
		{in: "alpha", want: "alpha"},
		{in: "reviewer=c, coder=a", want: "coder=a reviewer=c"},
		{in: "coder=a alpha", want: "alpha coder=a"},
		{in: "alpha beta", bad: true},
		{in: "coder=", bad: true},
		{in: " , ", bad: true},
	}
	for _, tt := range tests {
		l, err := ParseLabel(tt.in)
		if (err != nil) != tt.bad {
			t.Errorf("ParseLabel(%q) error %v, want error %v", tt.in, err, tt.bad)
			continue
		}
		if !tt.bad && l.String() != tt.want {
			t.Errorf("ParseLabel(%q) = %q, want %q", tt.in, l.String(), tt.want)
		}
	}
}
