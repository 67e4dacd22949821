// Package reuse answers leaf visits from recordings (docs/reuse-and-tests.md):
// the visits of earlier runs, or a cassette a repository keeps, found by
// their visit keys. It is a LeafRunner around another: a visit whose key
// a recording holds is answered from it and never sent; the walker only
// journals that it was reused, from where, at no cost.
package reuse

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/rundir"
)

// A Recording is one earlier run, or a cassette: the ended, succeeded
// leaf visits its journal holds, by key.
type Recording struct {
	Name string // the run's id, or the cassette's directory name
	Dir  string
	// repos are the repositories of the run's isolated scopes, by scope:
	// where what a visit changed in its worktree is read from.
	repos map[string]string
	// own says the recording is a run of this machine's runs directory,
	// whose repositories may be read (hit.change); a cassette, or a run
	// directory anywhere else, is data a repository may carry.
	own bool
	// kids are the delegated children each recorded visit started, by the
	// parent's path, in the order they started (docs/delegation.md).
	kids map[string][]child
}

// child is one delegate call a recorded visit made: the child's path, the
// agent it started and the task it gave, whether the child succeeded and
// its answer (what the parent's turn read).
type child struct {
	path, agent, task string
	ok                bool
	answer            string
}

// hit is one recorded visit.
type hit struct {
	rec  *Recording
	fact *record.Fact
}

// Set is the recordings a run may reuse, the first that holds a key
// answering it.
type Set struct {
	byKey  map[string]hit
	byPath map[string]hit // the latest recorded visit at each path: what a miss is compared with
	byNode map[string]hit
}

// Open reads the journals of the run or cassette directories dirs. A run
// directory directly under runsDir is this machine's own (Recording.own).
func Open(runsDir string, dirs ...string) (*Set, error) {
	s := &Set{byKey: map[string]hit{}, byPath: map[string]hit{}, byNode: map[string]hit{}}
	for _, dir := range dirs {
		facts, err := rundir.ReadJournal(dir)
		if err != nil {
			return nil, fmt.Errorf("reading the recording %s: %w", dir, err)
		}
		rec := &Recording{Name: filepath.Base(dir), Dir: dir, repos: map[string]string{}, own: directlyUnder(runsDir, dir)}
		for _, w := range record.Worktrees(facts) {
			rec.repos[w.Scope] = w.Repo
		}
		rec.kids = children(facts)
		for _, f := range facts {
			if f.Type != record.FactEnd || !f.Succeeded() || f.Key == nil || f.Skipped {
				continue
			}
			h := hit{rec, f}
			if _, ok := s.byKey[f.Key.Key]; !ok {
				s.byKey[f.Key.Key] = h
			}
			if _, ok := s.byPath[f.Visit]; !ok {
				s.byPath[f.Visit] = h
			}
			if _, ok := s.byNode[f.Node]; !ok {
				s.byNode[f.Node] = h
			}
		}
	}
	return s, nil
}

// children are the delegated children of the visits of facts, by their
// parent's path: a child is a start fact with a parent, its task the
// start's input and its agent its node's name after "delegate:" (a retry
// or a resume starts a child again at the same path: it is one child).
func children(facts []*record.Fact) map[string][]child {
	kids := map[string][]child{}
	at := map[string]int{}        // a child's index under its parent, by its path
	parent := map[string]string{} // a child's parent, by its path
	for _, f := range facts {
		if f.Type != record.FactStart || f.Parent == "" {
			continue
		}
		if _, seen := parent[f.Visit]; seen {
			continue
		}
		task, _ := f.Input.(string)
		at[f.Visit], parent[f.Visit] = len(kids[f.Parent]), f.Parent
		kids[f.Parent] = append(kids[f.Parent], child{path: f.Visit, agent: strings.TrimPrefix(f.Node, delegNodePrefix), task: task})
	}
	for _, f := range facts {
		if p, ok := parent[f.Visit]; ok && f.Type == record.FactEnd && f.Succeeded() {
			kids[p][at[f.Visit]].ok = true
			kids[p][at[f.Visit]].answer, _ = f.Output.(string)
		}
	}
	return kids
}

// delegNodePrefix names a delegated child's node: delegate:scout.
const delegNodePrefix = "delegate:"

// Len is how many recorded visits s holds.
func (s *Set) Len() int { return len(s.byKey) }

// lookup finds the recorded visit of key.
func (s *Set) lookup(key string) (hit, bool) {
	h, ok := s.byKey[key]
	return h, ok
}

// nearest is the recorded visit a miss at path is compared with: the
// visit at the same path, else one of the same node.
func (s *Set) nearest(path string) (hit, bool) {
	if h, ok := s.byPath[path]; ok {
		return h, true
	}
	node := path[strings.LastIndexByte(path, '/')+1:]
	h, ok := s.byNode[node]
	return h, ok
}

// locate finds a file a recording names: where it was written, or, for a
// recording moved to another directory (a cassette in another clone),
// at the same place under the recording's own directory. A recording is
// data a repository may carry: a path that is not inside its directory,
// links followed, is not used ("").
func (r *Recording) locate(p string) string {
	if p == "" {
		return ""
	}
	cands := []string{p}
	if !filepath.IsAbs(p) {
		cands[0] = filepath.Join(r.Dir, p)
	}
	slash := filepath.ToSlash(p)
	if i := strings.LastIndex(slash, "/home/"); i >= 0 {
		cands = append(cands, filepath.Join(r.Dir, filepath.FromSlash(slash[i+1:])))
	}
	for _, c := range cands {
		if within(r.Dir, c) {
			return c
		}
	}
	return ""
}

// within reports whether p exists inside dir, symbolic links followed.
func within(dir, p string) bool {
	rd, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return false
	}
	rp, err := filepath.EvalSymlinks(p)
	if err != nil {
		return false
	}
	return strings.HasPrefix(rp, rd+string(filepath.Separator))
}

// directlyUnder reports whether dir is a directory directly inside parent,
// symbolic links followed.
func directlyUnder(parent, dir string) bool {
	if parent == "" {
		return false
	}
	p, err1 := filepath.EvalSymlinks(parent)
	d, err2 := filepath.EvalSymlinks(dir)
	return err1 == nil && err2 == nil && filepath.Dir(d) == p
}
