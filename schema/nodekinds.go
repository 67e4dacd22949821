package schema

// The kinds' own fields. Each kind decodes its keys itself (field) and says
// what it needs (require), so that a node holds its kind's fields and no
// other's (docs/flow-files.md, Node kinds).

// NodeSpec is the fields of one node kind, as written.
type NodeSpec interface {
	Kind() Kind
	// field decodes e, one of the kind's own keys (kindKeys); the keys
	// every kind reads alike are the node's (commonField).
	field(r *reader, e entry, label string)
	// require reports what the kind needs and the node does not give, at
	// the kind key.
	require(r *reader, at Pos, label string)
	children() [][]*Node
}

// newSpec returns the empty fields of kind k.
func newSpec(k Kind) NodeSpec {
	switch k {
	case KindAgent:
		return &AgentSpec{}
	case KindRun:
		return &RunSpec{}
	case KindChoice:
		return &ChoiceSpec{}
	case KindParallel:
		return &ParallelSpec{}
	case KindMap:
		return &MapSpec{}
	case KindLoop:
		return &LoopSpec{}
	case KindFlow:
		return &CallSpec{}
	case KindAsk:
		return &AskSpec{}
	case KindWait:
		return &WaitSpec{}
	}
	return nil
}

// AgentSpec is an agent node: one turn of an agent.
type AgentSpec struct {
	Agent       String
	InlineAgent *AgentDoc
	Prompt      String
	Reads       []String
	Output      *Type
	Memory      String
	Retry       Int
	Delegate    *Delegate
}

// RunSpec is a run node: a command, as an argv or a script.
type RunSpec struct {
	Argv   []String
	Script String
	Env    []EnvVar
	// Sandbox is "on" to run the command confined (docs/native.md).
	Sandbox String
}

// ChoiceSpec is a choice node: guarded branches, the first that holds runs.
type ChoiceSpec struct {
	Branches []*Branch
}

// ParallelSpec is a parallel node: named branches that run together.
type ParallelSpec struct {
	Branches []*ParallelBranch
	FailFast Bool
}

// MapSpec is a map node: a sequence run for each item of a list.
type MapSpec struct {
	Items       String // the map: expression
	Max         Int
	Concurrency Int
	FailFast    Bool
	Do          []*Node
	DoPos       Pos
}

// LoopSpec is a loop node: a sequence run until a guard holds.
type LoopSpec struct {
	Until String
	Max   Int
	Do    []*Node
	DoPos Pos
}

// CallSpec is a flow node: a call of the flow file beside this one.
type CallSpec struct {
	Flow  String
	Input String
}

// AskSpec is an ask node: a question for a person.
type AskSpec struct {
	Ask     String
	Options []String
	Default String
	// Show lists the nodes whose outputs the person sees in full before
	// answering (docs/flow-files.md).
	Show []String
}

func (*AgentSpec) Kind() Kind    { return KindAgent }
func (*RunSpec) Kind() Kind      { return KindRun }
func (*ChoiceSpec) Kind() Kind   { return KindChoice }
func (*ParallelSpec) Kind() Kind { return KindParallel }
func (*MapSpec) Kind() Kind      { return KindMap }
func (*LoopSpec) Kind() Kind     { return KindLoop }
func (*CallSpec) Kind() Kind     { return KindFlow }
func (*AskSpec) Kind() Kind      { return KindAsk }

func (s *AgentSpec) field(r *reader, e entry, _ string) {
	switch e.key {
	case "agent":
		if isScalar(e.value) {
			s.Agent = r.str(e.value, "agent")
		} else {
			s.InlineAgent = r.inlineAgent(e.value)
			s.Agent = String{Value: s.InlineAgent.Name.Value, Pos: r.pos(e.value)}
		}
	case "prompt":
		s.Prompt = r.str(e.value, "prompt")
	case "reads":
		s.Reads = r.strings(e.value, "reads")
	case "output":
		s.Output = r.typeExpr(e.value, "output")
	case "memory":
		s.Memory = r.str(e.value, "memory")
	case "retry":
		s.Retry = r.integer(e.value, "retry", 0)
	case "delegate":
		s.Delegate = r.delegate(e.value)
	}
}

func (s *RunSpec) field(r *reader, e entry, _ string) {
	switch e.key {
	case "run":
		if isScalar(e.value) {
			s.Script = r.str(e.value, "run")
			if !s.Script.Set() {
				r.errorf(e.value, CodeEmpty, "give a command", "run is empty")
			}
		} else {
			s.Argv = r.strings(e.value, "run")
			if len(s.Argv) == 0 {
				r.errorf(e.value, CodeEmpty, "give the argv as a list: [go, test, ./...]", "run is empty")
			}
		}
	case "env":
		es, _ := r.mapping(e.value, "env", nil)
		for _, v := range es {
			s.Env = append(s.Env, EnvVar{Name: v.key, Value: r.str(v.value, "env."+v.key)})
		}
	case "sandbox":
		s.Sandbox = r.sandbox(e.value)
	}
}

func (s *ChoiceSpec) field(r *reader, e entry, label string) {
	if e.key != "choice" {
		return
	}
	items, _ := r.list(e.value, "choice")
	for _, it := range items {
		if b := r.branch(it); b != nil {
			s.Branches = append(s.Branches, b)
		}
	}
	if len(s.Branches) == 0 {
		r.errorf(e.value, CodeEmpty, "add `- when: <guard>` branches, each with do:", "%s has no branches", label)
	}
}

func (s *ParallelSpec) field(r *reader, e entry, label string) {
	switch e.key {
	case "parallel":
		es, ok := r.mapping(e.value, "parallel", nil)
		if ok && len(es) == 0 {
			r.errorf(e.value, CodeEmpty, "add named branches: `name: [nodes]`", "%s has no branches", label)
		}
		for _, b := range es {
			name := String{Value: b.key, Pos: r.pos(b.keyN)}
			if !validID(b.key) {
				r.errorf(b.keyN, CodeID, "branch names are letters, digits and _", "%q is not a valid branch name", b.key)
			}
			s.Branches = append(s.Branches, &ParallelBranch{Name: name, Do: r.sequence(b.value, "branch "+b.key)})
		}
	case "fail_fast":
		s.FailFast = r.boolean(e.value, "fail_fast")
	}
}

func (s *MapSpec) field(r *reader, e entry, _ string) {
	switch e.key {
	case "map":
		s.Items = r.str(e.value, "map")
	case "max":
		s.Max = r.integer(e.value, "max", 1)
	case "concurrency":
		s.Concurrency = r.integer(e.value, "concurrency", 1)
	case "fail_fast":
		s.FailFast = r.boolean(e.value, "fail_fast")
	case "do":
		s.DoPos = r.pos(e.keyN)
		s.Do = r.sequence(e.value, "do")
	}
}

func (s *LoopSpec) field(r *reader, e entry, label string) {
	switch e.key {
	case "loop":
		es, ok := r.mapping(e.value, "loop", loopKeys)
		if !ok {
			return
		}
		for _, l := range es {
			switch l.key {
			case "until":
				s.Until = r.str(l.value, "loop.until")
			case "max":
				s.Max = r.integer(l.value, "loop.max", 1)
			}
		}
		if !s.Until.Set() {
			r.errorf(e.keyN, CodeMissing, "add until: <a guard that says when the loop is done>", "%s has no until", label)
		}
		if !s.Max.IsSet && !s.Max.Pos.IsValid() { // a max that is there but not a number is one fault, said by integer
			r.errorf(e.keyN, CodeBound, "add max: <the most iterations>; reaching it fails `unconverged`", "%s has no max", label)
		}
	case "do":
		s.DoPos = r.pos(e.keyN)
		s.Do = r.sequence(e.value, "do")
	}
}

func (s *CallSpec) field(r *reader, e entry, _ string) {
	switch e.key {
	case "flow":
		s.Flow = r.str(e.value, "flow")
	case "input":
		s.Input = r.str(e.value, "input")
	}
}

func (s *AskSpec) field(r *reader, e entry, _ string) {
	switch e.key {
	case "ask":
		s.Ask = r.str(e.value, "ask")
	case "options":
		s.Options = r.strings(e.value, "options")
	case "default":
		s.Default = r.str(e.value, "default")
	case "show":
		s.Show = r.strings(e.value, "show")
	}
}

func (s *AgentSpec) require(r *reader, at Pos, label string) {
	if !s.Agent.Set() && s.InlineAgent == nil {
		r.diags.Add(at, CodeMissing, "name an agent from the catalogue (flow agents lists them)", "%s names no agent", label)
	}
	if !s.Prompt.Set() {
		r.diags.Add(at, CodeMissing, "add prompt: what this turn should do", "%s has no prompt", label)
	}
}

func (*RunSpec) require(*reader, Pos, string)      {}
func (*ChoiceSpec) require(*reader, Pos, string)   {}
func (*ParallelSpec) require(*reader, Pos, string) {}

func (s *MapSpec) require(r *reader, at Pos, label string) {
	if !s.Items.Set() {
		r.diags.Add(at, CodeMissing, "give an expression that yields a list, e.g. map: input.files", "%s has an empty map expression", label)
	}
	if !s.Max.IsSet && !s.Max.Pos.IsValid() { // a max that is there but not a number is one fault, said by integer
		r.diags.Add(at, CodeBound, "add max: <the most items>; a longer list fails `too-many` before any item runs", "%s has no max", label)
	}
	if s.Do == nil {
		r.diags.Add(at, CodeMissing, "add do: with the nodes to run for each item", "%s has no do", label)
	}
}

func (s *LoopSpec) require(r *reader, at Pos, label string) {
	if s.Do == nil {
		r.diags.Add(at, CodeMissing, "add do: with the nodes of one iteration", "%s has no do", label)
	}
}

func (s *CallSpec) require(r *reader, at Pos, label string) {
	if !s.Flow.Set() {
		r.diags.Add(at, CodeMissing, "name a flow file beside this one, without .yaml", "%s names no flow", label)
	}
}

func (s *AskSpec) require(r *reader, at Pos, label string) {
	if !s.Ask.Set() {
		r.diags.Add(at, CodeMissing, "write the question", "%s has an empty question", label)
	}
	if s.Default.Set() && len(s.Options) > 0 && !containsStr(s.Options, s.Default.Value) {
		r.diags.Add(s.Default.Pos, CodeValue, "make the default one of the options", "default %q is not one of the options", s.Default.Value)
	}
}

func (*AgentSpec) children() [][]*Node { return nil }
func (*RunSpec) children() [][]*Node   { return nil }
func (*CallSpec) children() [][]*Node  { return nil }
func (*AskSpec) children() [][]*Node   { return nil }
func (s *MapSpec) children() [][]*Node { return [][]*Node{s.Do} }
func (s *LoopSpec) children() [][]*Node {
	return [][]*Node{s.Do}
}

func (s *ChoiceSpec) children() [][]*Node {
	out := make([][]*Node, len(s.Branches))
	for i, b := range s.Branches {
		out[i] = b.Do
	}
	return out
}

func (s *ParallelSpec) children() [][]*Node {
	out := make([][]*Node, len(s.Branches))
	for i, b := range s.Branches {
		out[i] = b.Do
	}
	return out
}
