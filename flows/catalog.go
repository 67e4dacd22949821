package flows

import (
	"path/filepath"
	"strings"

	"github.com/flowrun/flow/internal/ordered"
	"github.com/flowrun/flow/schema"
)

// Catalogue is the set of agents a flow can name, built by discovery (SPEC
// 2): later sources override earlier ones by name.
type Catalogue struct {
	agents map[string]*Agent
	broken map[string]schema.Diagnostics // files that did not parse, by agent name or file stem
}

// Agents returns the catalogue's agents sorted by name.
func (c *Catalogue) Agents() []*Agent {
	out := make([]*Agent, 0, len(c.agents))
	for _, name := range ordered.Keys(c.agents) {
		out = append(out, c.agents[name])
	}
	return out
}

// Lookup returns the agent with that name, or nil.
func (c *Catalogue) Lookup(name string) *Agent { return c.agents[name] }

// Problems returns the diagnostics of agent files that could not be read.
func (c *Catalogue) Problems() schema.Diagnostics {
	var out schema.Diagnostics
	for _, ds := range c.broken {
		out = append(out, ds...)
	}
	return out.Sorted()
}

// UserAgentDirs are the agent directories of the user whose home is home,
// lowest priority first.
func UserAgentDirs(home string) []string {
	return []string{
		filepath.Join(home, ".config", "flow", "agents"),
		filepath.Join(home, ".pi", "agent", "agents"),
		filepath.Join(home, ".claude", "agents"),
	}
}

// ProjectAgentDirs are the repository's own agent directories. Their files
// are third-party instructions and load only when asked for.
func ProjectAgentDirs(workDir string) []string {
	return []string{
		filepath.Join(workDir, ".flow", "agents"),
		filepath.Join(workDir, ".pi", "agents"),
		filepath.Join(workDir, ".claude", "agents"),
	}
}

// NewCatalogue discovers agents in the user's directories, then the extra
// directories, then (with projectAgents) the project's.
func NewCatalogue(opts Options, extraDirs []string) *Catalogue {
	c := &Catalogue{agents: map[string]*Agent{}, broken: map[string]schema.Diagnostics{}}
	for _, d := range opts.userDirs() {
		c.addDir(d, "user", opts)
	}
	for _, d := range extraDirs {
		c.addDir(d, "flow", opts)
	}
	if opts.ProjectAgents {
		for _, d := range ProjectAgentDirs(opts.workDir()) {
			c.addDir(d, "project", opts)
		}
	}
	return c
}

func (c *Catalogue) addDir(dir, scope string, opts Options) {
	entries, err := opts.readDir(dir)
	if err != nil {
		return // an absent directory is an empty one
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".md") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		// A file whose name: cannot be read is filed under its stem: agent
		// files are named for their agent (pi and Claude Code name theirs so),
		// and a node naming that agent then says why it could not be read
		// instead of calling it unknown.
		stem := strings.TrimSuffix(e.Name(), ".md")
		src, err := opts.read(path)
		if err != nil {
			c.broken[stem] = schema.Diagnostics{{Pos: schema.Pos{File: path}, Code: schema.CodeRead, Summary: err.Error()}}
			continue
		}
		doc, diags := opts.Limits.ParseAgentFile(path, src)
		opts.checkDriver(doc, &diags)
		driver := opts.DefaultDriver
		if d := dirDriver(dir); d != "" && opts.knowsDriver(d) {
			driver = d
		}
		a := agentFromDoc(doc, scope, path, driver)
		opts.checkTools(doc, a.Driver, &diags)
		diags.Quote(path, src)
		if diags.HasErrors() {
			key := doc.Name.Value
			if key == "" {
				key = stem
			}
			c.broken[key] = diags
			continue
		}
		delete(c.broken, a.Name)
		c.agents[a.Name] = a
	}
}

// dirDriver is the driver whose agents a directory holds by its place:
// Claude Code's (.claude/agents) run on claude, pi's (.pi/agents,
// .pi/agent/agents) on pi, and other directories' on the configured
// default ("").
func dirDriver(dir string) string {
	dir = filepath.Clean(dir)
	if filepath.Base(dir) != "agents" {
		return ""
	}
	parent := filepath.Dir(dir)
	switch {
	case filepath.Base(parent) == ".claude":
		return "claude"
	case filepath.Base(parent) == ".pi",
		filepath.Base(parent) == "agent" && filepath.Base(filepath.Dir(parent)) == ".pi":
		return "pi"
	}
	return ""
}

// inherit is Claude Code's model for "the model of the session that
// started me": for flow, no pin of the agent's own.
const inherit = "inherit"

// agentFromDoc resolves an agent document; defaultDriver runs it when it
// names no driver.
func agentFromDoc(d *schema.AgentDoc, scope, source, defaultDriver string) *Agent {
	a := &Agent{
		Name: d.Name.Value, Description: d.Description.Value, Driver: d.Driver.Value,
		Model: d.Model.Value, Thinking: d.Thinking.Value, BaseURL: d.BaseURL.Value,
		APIKeyEnv: d.APIKeyEnv.Value, Instructions: d.Instructions, Scope: scope, Source: source, Pos: d.Pos,
		MaxSteps: d.MaxSteps.Value, Sandbox: d.Sandbox.Value,
	}
	if a.Driver == "" {
		a.Driver = defaultDriver
	}
	if strings.EqualFold(a.Model, inherit) {
		a.Model = ""
	}
	if d.ToolsSet {
		a.Tools = []string{}
		for _, t := range d.Tools {
			a.Tools = append(a.Tools, t.Value)
		}
	}
	for _, c := range d.Command {
		a.Command = append(a.Command, c.Value)
	}
	a.Delegate = delegateOf(d.Delegate)
	return a
}
