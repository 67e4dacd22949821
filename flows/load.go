package flows

import (
	"errors"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"

	"github.com/flowrun/flow/schema"
)

// Options say where agents come from and what a load may assume.
type Options struct {
	// WorkDir is the project directory (project agents, relative paths).
	// Empty means the current directory.
	WorkDir string
	// ProjectAgents loads the repository's own agent directories (docs/flow-files.md, Agents).
	ProjectAgents bool
	// UserAgentDirs overrides the user's agent directories; nil means
	// UserAgentDirs(), an empty slice means none.
	UserAgentDirs []string
	// DefaultDriver is the driver of agent files that name none.
	DefaultDriver string
	// Drivers are the names of the agent drivers the program provides (an
	// drivers.Registry's Names): an agent whose driver is not among them is
	// an error, with a "did you mean" and the list. nil means the caller
	// provides no list, and any driver name is accepted; the engine still
	// refuses to run an agent whose driver it was not given.
	Drivers []string
	// DriverTools holds, by driver name, the tool names that driver's agents
	// may list (lower case) with the driver's own name for each (an
	// drivers.Registry's Tools). A tool of an agent run by a driver listed
	// here that is not among its names is an error; a driver not listed
	// takes any name.
	DriverTools map[string]map[string]string
	// Sources holds file contents to use instead of the disk: a resume loads
	// the flows its snapshot recorded, not the files as they are now.
	Sources map[string][]byte
	// Agents, when set, replaces discovery: the agents as a snapshot
	// recorded them, so a resume runs the same agents.
	Agents []*Agent
	// Disk is what the load reads files and directories from; nil reads
	// nothing (every file is then ErrNoDisk, unless in Sources). Package
	// flows/osdisk's OS is the machine's.
	Disk Disk
	// Limits bound the size, nesting and node count of every flow and
	// agent file read (configuration: limits.file_bytes, limits.depth,
	// limits.nodes); zero fields take schema's defaults.
	Limits schema.Limits

	// recorded says the plan is compiled again from what a run recorded
	// (Reload): nothing is read from the disk — no file outside Sources,
	// no working directory but the recorded one, no repository checked.
	recorded bool
}

// Load reads, checks and compiles the flow in file, the flows it calls and
// the agents it names. It returns every problem at once; a plan comes back
// only when there is no error (warnings may remain, in Plan.Warnings).
func Load(file string, opts Options) (*Plan, schema.Diagnostics) {
	src, err := opts.read(file)
	if err != nil {
		return nil, schema.Diagnostics{{Pos: schema.Pos{File: file}, Code: schema.CodeRead, Summary: readError(err), Detail: "check the path"}}
	}
	return LoadSource(file, src, opts)
}

// LoadSource is Load for a file already read (tests, fuzzing, snapshots).
// Called flows are still read from beside file.
func LoadSource(file string, src []byte, opts Options) (*Plan, schema.Diagnostics) {
	if opts.DefaultDriver == "" {
		opts.DefaultDriver = DefaultDriver
	}
	l := &loader{opts: opts, plan: &Plan{Flows: map[string]*Flow{}, Agents: map[string]*Agent{}, Limits: opts.Limits.WithDefaults()}}
	root := l.flow(file, src)
	diags := l.diags.Sorted()
	for _, f := range l.read {
		diags.Quote(f.File, f.Doc.Source)
	}
	var errs, warns schema.Diagnostics
	for _, d := range diags {
		if d.Severity == schema.Warning {
			warns = append(warns, d)
		} else {
			errs = append(errs, d)
		}
	}
	if len(errs) > 0 || root == nil {
		return nil, diags
	}
	l.plan.Root = root
	l.plan.Warnings = warns
	l.plan.computeKeys()
	return l.plan, diags
}

func readError(err error) string {
	if errors.Is(err, fs.ErrNotExist) {
		return "no such file"
	}
	return strings.TrimPrefix(err.Error(), "open ")
}

type loader struct {
	opts      Options
	plan      *Plan
	diags     schema.Diagnostics
	loading   []string // the call stack of flow names, for cycles
	agentDirs []string // the agent directories of the flows being loaded
	inline    []*Agent // and their inline agents: a called flow sees its callers'
	read      []*Flow  // every flow file parsed, in order: their diagnostics quote them
}

// flow parses and checks one flow file.
func (l *loader) flow(file string, src []byte) *Flow {
	doc, diags := l.opts.Limits.ParseFlow(file, src)
	l.diags = append(l.diags, diags...)
	name := doc.Name.Value
	if name == "" {
		name = schema.Stem(file)
	}
	f := &Flow{Name: name, File: file, Doc: doc, Input: doc.Input, Model: doc.Model.Value,
		Timeout: doc.Timeout.Value, Concurrency: doc.Concurrency.Value, Budget: budget(doc.Budget)}
	l.plan.Flows[name] = f
	l.read = append(l.read, f)
	l.loading = append(l.loading, name)
	defer func() { l.loading = l.loading[:len(l.loading)-1] }()

	// A called flow sees its callers' agent directories, then its own.
	dirs := append([]string{}, l.agentDirs...)
	for _, d := range doc.AgentDirs {
		p := d.Value
		if !filepath.IsAbs(p) {
			p = filepath.Join(filepath.Dir(file), p)
		}
		if l.opts.Agents == nil { // a snapshot's agents: nothing is read from the disk
			if !l.opts.isDir(p) {
				l.diags.Add(d.Pos, schema.CodeAgents, "agent directories are relative to the flow file", "agent directory %q does not exist", d.Value)
			}
		}
		dirs = append(dirs, p)
	}
	l.agentDirs = dirs
	defer func(saved []string) { l.agentDirs = saved }(l.agentDirs[:len(l.agentDirs)-len(doc.AgentDirs)])
	opts := l.opts
	opts.ProjectAgents = opts.ProjectAgents || doc.ProjectAgents.Value
	var cat *Catalogue
	if l.opts.Agents != nil {
		// A snapshot's agents replace discovery, which reads the disk: a
		// Temporal workflow rebuilds its plan this way on any worker, and
		// must get the same plan everywhere.
		cat = &Catalogue{agents: map[string]*Agent{}, broken: map[string]schema.Diagnostics{}}
		for _, a := range l.opts.Agents {
			cat.agents[a.Name] = a
		}
	} else {
		cat = NewCatalogue(opts, dirs)
	}
	for _, a := range l.inline {
		cat.agents[a.Name] = a
	}
	if len(l.loading) == 1 {
		l.plan.Catalogue = cat
	}
	defer func(saved []*Agent) { l.inline = saved }(l.inline)
	for _, ia := range doc.InlineAgents {
		l.opts.checkDriver(ia, &l.diags)
		// Source is the flow file: an exec agent's ./x is relative to it.
		a := agentFromDoc(ia, "inline", f.File, l.opts.DefaultDriver)
		l.opts.checkTools(ia, a.Driver, &l.diags)
		cat.agents[a.Name] = a
		l.inline = append(l.inline, a)
	}
	c := &checker{loader: l, flow: f, cat: cat, diags: &l.diags, ids: map[string]schema.Pos{}}
	inputT := schema.StringType
	if f.Input != nil {
		inputT = f.Input
	}
	f.Nodes = c.sequence(doc.Nodes, (*scope)(nil).with("input", inputT), nil)
	f.Schedule = l.schedule(f, doc.Schedule)
	c.costWarnings(f.Nodes, f.Budget != nil && f.Budget.Cost > 0)
	if len(doc.Models) > 0 || doc.Sweep != nil {
		used := l.plan.usedAgents(f.Nodes)
		f.Models = c.models(doc.Models, used)
		f.Sweep = c.sweep(doc.Sweep, used, inputT)
	}
	if len(f.Nodes) > 0 {
		f.Output = f.Nodes[len(f.Nodes)-1].Output
	} else {
		f.Output = schema.AnyType
	}
	return f
}

// callee loads a called flow by name from beside the caller. A name is a
// file's stem, never a path: what a run enters is what the plan holds under
// that name, and a path would name a file the plan keeps under another.
func (l *loader) callee(caller *Flow, name schema.String) *Flow {
	if !calleeName(name.Value) {
		stem := schema.Stem(name.Value)
		hint := "a called flow is a file beside this one, named by its stem: flow: " + stem +
			" calls " + stem + ".yaml; move or link the flow beside " + filepath.Base(caller.File)
		if stem == "" || stem == "." || stem == ".." {
			hint = "a called flow is a file beside this one, named by its stem (release-notes for release-notes.yaml)"
		}
		l.diags.Add(name.Pos, schema.CodeFlow, hint, "flow %q is a path, not a flow's name", name.Value)
		return nil
	}
	if f, ok := l.plan.Flows[name.Value]; ok {
		for _, n := range l.loading {
			if n == name.Value {
				l.diags.Add(name.Pos, schema.CodeCycle, "a flow may not call itself, directly or through others", "call cycle: %s -> %s", strings.Join(l.loading, " -> "), name.Value)
				return nil
			}
		}
		return f
	}
	dir := filepath.Dir(caller.File)
	for _, ext := range []string{".yaml", ".yml"} {
		path := filepath.Join(dir, name.Value+ext)
		src, err := l.opts.read(path)
		if err != nil {
			continue
		}
		return l.flow(path, src)
	}
	var have []string
	if entries, err := l.opts.readDir(dir); err == nil {
		for _, e := range entries {
			if ext := filepath.Ext(e.Name()); ext == ".yaml" || ext == ".yml" {
				have = append(have, schema.Stem(e.Name()))
			}
		}
	}
	sort.Strings(have)
	hint := schema.DidYouMean(name.Value, have)
	if hint == "" {
		hint = "flows are files beside this one: " + strings.Join(have, ", ")
	}
	l.diags.Add(name.Pos, schema.CodeFlow, hint, "no flow %q beside %s", name.Value, filepath.Base(caller.File))
	return nil
}

// calleeName reports whether s names a flow beside its caller: no
// directory, no extension.
func calleeName(s string) bool {
	return s != "." && s != ".." && !strings.ContainsAny(s, "/\\\x00") &&
		!strings.HasSuffix(s, ".yaml") && !strings.HasSuffix(s, ".yml")
}

func budget(b *schema.Budget) *Budget {
	if b == nil {
		return nil
	}
	return &Budget{Tokens: int64(b.Tokens.Value), Cost: b.Cost.Value}
}
