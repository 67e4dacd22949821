package delegation

import (
	"strings"

	"github.com/flowrun/flow/engine/record"
)

// Child is a child an earlier attempt of the run started.
type Child struct {
	Path, Agent, Task string
}

// start holds what a child's start fact records: its parent and its task.
type start struct {
	parent, task string
}

// Registry is what a run knows of its delegated children: those earlier
// attempts started, by parent, and what the start fact of each child of
// this attempt records.
type Registry struct {
	mu      Locker
	earlier map[string][]Child
	starts  map[string]start
}

// NewRegistry is an empty registry; mu is the host's.
func NewRegistry(mu Locker) *Registry {
	return &Registry{mu: mu, earlier: map[string][]Child{}, starts: map[string]start{}}
}

// ReplayChild indexes a child's start fact of an earlier attempt under
// its parent. Called from replay, before the walk.
func (g *Registry) ReplayChild(f *record.Fact) {
	if f.Type != record.FactStart || f.Parent == "" {
		return
	}
	task, _ := f.Input.(string)
	agent := strings.TrimPrefix(f.Node, NodePrefix)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.earlier[f.Parent] = append(g.earlier[f.Parent], Child{Path: f.Visit, Agent: agent, Task: task})
}

// Earlier are the children earlier attempts started under parent.
func (g *Registry) Earlier(parent string) []Child {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.earlier[parent]
}

// Started notes that the visit at path is a child of parent, for task.
func (g *Registry) Started(path, parent, task string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.starts[path] = start{parent: parent, task: task}
}

// ChildStart fills in what the start fact s records when its visit is a
// delegated child: its parent's visit and its task.
func (g *Registry) ChildStart(s *record.VisitStarted) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if c, ok := g.starts[s.Visit]; ok {
		s.Parent, s.Input = c.parent, c.task
	}
}

// IsChild reports whether the visit at path is a delegated child.
func (g *Registry) IsChild(path string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, ok := g.starts[path]
	return ok
}
