package schema

import "fmt"

// Limits bound what reading one flow or agent file may cost, so that a
// hostile or generated file is a clear error rather than minutes of work
// and gigabytes of memory. A zero field takes its default. The
// configuration sets them as limits.file_bytes, limits.depth and
// limits.nodes (docs/drivers.md, Configuration); flows.Options carries them to the loader.
type Limits struct {
	// FileBytes is the largest file read, in bytes.
	FileBytes int
	// Depth is the deepest nesting of mappings and lists.
	Depth int
	// Nodes is the most YAML nodes (keys, values, mappings and lists) a
	// file may hold once its aliases are expanded: it bounds both large
	// files and alias bombs ("billion laughs").
	Nodes int
	// PromptBytes is the largest prompt a turn is sent: its rendered
	// template, reads and output instruction (limits.prompt_bytes). The
	// engine refuses a turn over it, naming the node and the read.
	PromptBytes int
}

// The default limits: far above any flow written by hand (the examples are
// a few kilobytes, nested a dozen levels), and enough for generated flows
// of several megabytes.
const (
	DefaultFileBytes = 8 << 20
	DefaultDepth     = 100
	DefaultNodes     = 2_000_000
	// DefaultPromptBytes is 1 MiB: about 250,000 tokens, past every
	// model's context window.
	DefaultPromptBytes = 1 << 20
)

// WithDefaults returns l with every unset (zero or negative) limit at its
// default.
func (l Limits) WithDefaults() Limits {
	if l.FileBytes <= 0 {
		l.FileBytes = DefaultFileBytes
	}
	if l.Depth <= 0 {
		l.Depth = DefaultDepth
	}
	if l.Nodes <= 0 {
		l.Nodes = DefaultNodes
	}
	if l.PromptBytes <= 0 {
		l.PromptBytes = DefaultPromptBytes
	}
	return l
}

// raise says how to raise a limit, for a diagnostic's detail.
func raise(key string, value int) string {
	return fmt.Sprintf("split the file, or raise %s (now %d) in .flow/config.yaml or with FLOW_%s", key, value, envName(key))
}

func envName(key string) string {
	b := []byte(key)
	for i, c := range b {
		switch {
		case c == '.':
			b[i] = '_'
		case 'a' <= c && c <= 'z':
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

func (ds *Diagnostics) tooBig(file string, l Limits) {
	ds.Add(Pos{File: file, Line: 1, Col: 1}, CodeLimit, raise("limits.file_bytes", l.FileBytes),
		"the file is larger than limits.file_bytes (%d bytes)", l.FileBytes)
}

func (ds *Diagnostics) tooDeep(p Pos, l Limits) {
	ds.Add(p, CodeLimit, raise("limits.depth", l.Depth),
		"mappings and lists nest deeper than limits.depth (%d) here", l.Depth)
}

func (ds *Diagnostics) tooMany(p Pos, l Limits, viaAlias bool) {
	what := "the file holds more than limits.nodes (%d) YAML nodes by here"
	if viaAlias {
		what = "expanding this alias makes the file more than limits.nodes (%d) YAML nodes"
	}
	ds.Add(p, CodeLimit, raise("limits.nodes", l.Nodes), what, l.Nodes)
}
