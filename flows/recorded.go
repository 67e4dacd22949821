package flows

import (
	"encoding/json"

	"github.com/flowrun/flow/internal/ordered"
	"github.com/flowrun/flow/schema"
)

// A run records what it ran so that a resume (or a Temporal workflow)
// compiles the same plan again, whatever the files say by then: each flow
// file's source, and the agents as resolved, each encoded as JSON. The run
// directory stores both without knowing what a plan is; these two
// functions are the plan's side of it.

// EncodeAgents encodes a plan's agents, by name, as a run records them.
func EncodeAgents(agents map[string]*Agent) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(agents))
	for name, a := range agents {
		out[name], _ = json.Marshal(a) // plain data: it always encodes
	}
	return out
}

// Reload compiles file again from what a run recorded: the sources of the
// flow files by path and the agents as EncodeAgents wrote them. Nothing is
// read from the disk — opts.Disk is not used: no file outside sources, not
// the current directory, and no repository is checked (a Temporal worker
// need not have it; the checks ran when the run was loaded, before its
// snapshot). workDir, when not "", is the run's working directory.
func Reload(file string, sources map[string][]byte, agents map[string]json.RawMessage, workDir string, opts Options) (*Plan, schema.Diagnostics) {
	opts.Sources, opts.Agents, opts.recorded = sources, make([]*Agent, 0, len(agents)), true
	for _, name := range ordered.Keys(agents) {
		raw := agents[name]
		a := new(Agent)
		//workflowcheck:ignore decoding is a function of raw; the checker reaches the GC's start through reflect
		if err := json.Unmarshal(raw, a); err != nil {
			var diags schema.Diagnostics
			diags.Add(schema.Pos{File: file}, schema.CodeRead, "", "the recorded agent %s does not read: %v", name, err)
			return nil, diags
		}
		opts.Agents = append(opts.Agents, a)
	}
	if workDir != "" {
		opts.WorkDir = workDir
	}
	return Load(file, opts)
}
