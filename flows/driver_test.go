package flows

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowrun/flow/flows/osdisk"
)

// testDrivers stand for the drivers a program registers (cmd/flow
// registers these five): the loader knows no names of its own.
var testDrivers = []string{"pi", "claude", "codex", "openai", "exec"}

// TestUnknownDriver checks that a driver the program does not provide is
// reported at the `driver:` that names it, wherever the agent is declared,
// with a "did you mean" or the list of the drivers there are.
func TestUnknownDriver(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "agents"), 0o755); err != nil {
		t.Fatal(err)
	}
	agent := "---\nname: w\ndescription: writes\ndriver: claud\n---\nWrite.\n"
	if err := os.WriteFile(filepath.Join(dir, "agents", "w.md"), []byte(agent), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, src, want string
		drivers         []string
	}{{
		name: "inline in a node",
		src:  "name: f\nnodes:\n  - id: a\n    agent: {name: x, description: d, driver: bogus}\n    prompt: p\n",
		want: `f.yaml:4:12: driver: agent "x" has driver "bogus", which flow does not know
    4 |     agent: {name: x, description: d, driver: bogus}
      |            ^
	hint: set driver: in the agent file, or a default driver in the configuration
f.yaml:4:46: driver: unknown driver "bogus"
    4 |     agent: {name: x, description: d, driver: bogus}
      |                                              ^
	hint: drivers are pi, claude, codex, openai, exec`,
		drivers: testDrivers,
	}, {
		name: "inline in the flow",
		src:  "name: f\nagents: [{name: x, description: d, driver: codx}]\nnodes:\n  - {id: a, agent: x, prompt: p}\n",
		want: `f.yaml:2:44: driver: unknown driver "codx"
    2 | agents: [{name: x, description: d, driver: codx}]
      |                                            ^
	hint: did you mean "codex"?
f.yaml:4:20: driver: agent "x" has driver "codx", which flow does not know
    4 |   - {id: a, agent: x, prompt: p}
      |                    ^
	hint: set driver: in the agent file, or a default driver in the configuration`,
		drivers: testDrivers,
	}, {
		name: "in an agent file",
		src:  "name: f\nagents: [./agents]\nnodes:\n  - {id: a, agent: w, prompt: p}\n",
		want: `agents/w.md:4:9: driver: unknown driver "claud"
    4 | driver: claud
      |         ^
	hint: did you mean "claude"?
f.yaml:4:20: agent: agent "w" could not be read
    4 |   - {id: a, agent: w, prompt: p}
      |                    ^
	hint: fix agents/w.md (see its errors)`,
		drivers: testDrivers,
	}, {
		name:    "a driver the program registers",
		src:     "name: f\nnodes:\n  - {id: a, agent: {name: x, description: d, driver: echo}, prompt: p}\n",
		drivers: append([]string{"echo"}, testDrivers...),
	}, {
		name: "the list is the program's",
		src:  "name: f\nnodes:\n  - {id: a, agent: {name: x, description: d, driver: pi}, prompt: p}\n",
		want: `f.yaml:3:20: driver: agent "x" has driver "pi", which flow does not know
    3 |   - {id: a, agent: {name: x, description: d, driver: pi}, prompt: p}
      |                    ^
	hint: set driver: in the agent file, or a default driver in the configuration
f.yaml:3:54: driver: unknown driver "pi"
    3 |   - {id: a, agent: {name: x, description: d, driver: pi}, prompt: p}
      |                                                      ^
	hint: drivers are echo`,
		drivers: []string{"echo"},
	}, {
		name: "no list accepts any name",
		src:  "name: f\nnodes:\n  - {id: a, agent: {name: x, description: d, driver: anything}, prompt: p}\n",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			_, diags := LoadSource(filepath.Join(dir, "f.yaml"), []byte(tc.src),
				Options{Disk: osdisk.OS, UserAgentDirs: []string{}, WorkDir: dir, Drivers: tc.drivers})
			got := strings.ReplaceAll(diags.Error(), dir+string(filepath.Separator), "")
			if got != tc.want {
				t.Errorf("diagnostics:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}
