package schema

// Code names the kind of a diagnostic. Codes are part of what flow promises:
// editors, scripts and `flow validate --json` readers match on them, so each
// one is declared here, once, and never renamed. A test in package flows
// fails when a diagnostic is made with a code missing here, or when a code
// here appears in no golden archive under flows/testdata.
type Code string

// The codes, with what each one reports.
const (
	CodeAgent        Code = "agent"         // a node names an agent no directory provides, or one whose file is broken
	CodeAgents       Code = "agents"        // an agent directory the flow lists does not exist
	CodeBound        Code = "bound"         // a map or a loop has no max
	CodeBranch       Code = "branch"        // a choice branch lacks when: or do:, or its else is not alone or not last
	CodeBudget       Code = "budget"        // (a warning) a cost budget bounds an agent whose driver reports no cost
	CodeCycle        Code = "cycle"         // flows call each other in a cycle
	CodeDriver       Code = "driver"        // an agent's driver is not one flow knows
	CodeDuplicateID  Code = "duplicate-id"  // two nodes of a file have the same id
	CodeDuplicateKey Code = "duplicate-key" // a mapping has the same key twice
	CodeDuration     Code = "duration"      // a value is not a positive duration
	CodeEmpty        Code = "empty"         // the file, a sequence of nodes, a command or a set of branches is empty
	CodeExpr         Code = "expr"          // an expression does not compile, or reads what is not in scope
	CodeFlow         Code = "flow"          // a called flow has no file beside its caller
	CodeFrontmatter  Code = "frontmatter"   // an agent file has no YAML frontmatter, or does not close it
	CodeID           Code = "id"            // an id or a branch name is not an identifier
	CodeInput        Code = "input"         // a called flow declares an input the call does not give
	CodeKey          Code = "key"           // a node has a key its kind does not take
	CodeKind         Code = "kind"          // a node has no kind key, or several
	CodeMemory       Code = "memory"        // memory: names neither flow nor an enclosing node
	CodeMissing      Code = "missing"       // a required key is absent
	CodeName         Code = "name"          // a flow's name is not its file's stem, or an agent or field name is not valid
	CodeRange        Code = "range"         // a number is below its floor
	CodeRead         Code = "read"          // a file cannot be read
	CodeReads        Code = "reads"         // an item of reads: is not an address, or of show: not a node
	CodeReservedID   Code = "reserved-id"   // an id is a name that expressions use
	CodeTemplate     Code = "template"      // a ${{ is not closed
	CodeType         Code = "type"          // a value has the wrong shape, a type is unknown, or a map: yields no list
	CodeUnknownKey   Code = "unknown-key"   // a key flow does not know
	CodeValue        Code = "value"         // a key that takes one of a few words has another
	CodeYAML         Code = "yaml"          // the file is not YAML flow can read: a syntax error, several documents, an alias without its anchor
	CodeLimit        Code = "limit"         // the file is larger, nests deeper or holds more nodes than limits.* allow
	CodeShell        Code = "shell"         // a ${{ }} in a run: script sits where its value could not be passed as data
	CodeTool         Code = "tool"          // an agent names a tool its driver does not have
	CodeSweep        Code = "sweep"         // a sweep's baseline is not one of its assignments, its score is neither a boolean nor a number, or its tasks file cannot be used
	CodeIsolation    Code = "isolation"     // isolation: worktree outside a git repository or inside another isolated scope, or land:/repo: without it
)

// The codes of schedules (docs/serve.md), in a block of their own so that the
// alignment of the block above stays as it is.
const (
	CodeCron          Code = "cron"           // a schedule's cron is not an expression flow can read
	CodeTimezone      Code = "timezone"       // a schedule's tz is not a time zone this machine knows
	CodeScheduleInput Code = "schedule-input" // a schedule's input does not fit the flow's declared input
)

// The codes of delegation (docs/delegation.md).
const (
	CodeDelegate Code = "delegate" // delegate: names an agent the catalogue lacks
)
