package record

import "slices"

// Worktree is what the journal records of an isolated scope's working copy
// (docs/worktrees.md). Which fields are set depends on the fact that carries it:
//   - a FactWorktree: the worktree was made (Repo, Path, Branch, Base,
//     Commit: the head it was made at) or removed (Removed);
//   - the FactEnd of a visit that ran in a worktree: its checkpoint (Commit,
//     the files it changed, Base: the head it started from, so that
//     Base..Commit is what it changed), and for an isolated leaf its
//     landing too;
//   - a FactLand: how the scope landed (Land, Commit, Onto, Files).
type Worktree struct {
	// Scope names the scope: an isolated visit's path, a map item's path
	// (look[2]), a parallel branch's (checks/lint), or a memory scope's
	// path and agent (review@coder).
	Scope  string   `json:"scope"`
	Repo   string   `json:"repo,omitempty"` // the repository's top-level directory
	Path   string   `json:"path,omitempty"` // the worktree's directory
	Branch string   `json:"branch,omitempty"`
	Base   string   `json:"base,omitempty"`   // the commit the scope started from
	Commit string   `json:"commit,omitempty"` // the scope's head after this fact
	Files  []string `json:"files,omitempty"`  // the files changed (by the visit, or by the scope when it lands)
	Land   Landing  `json:"land,omitempty"`
	Onto   string   `json:"onto,omitempty"` // the integration branch's commit after the landing
	// Removed marks the worktree's removal; its branch may stay.
	Removed bool `json:"removed,omitempty"`
}

// Landing is how an isolated scope's changes ended.
type Landing string

// The landings.
const (
	Landed       Landing = "landed"   // on the run's integration branch, flow/<run-id>
	LandConflict Landing = "conflict" // they conflict with what landed before; the branch is kept
	LandKept     Landing = "kept"     // land: none; the branch is kept for the user
)

// Worktrees folds the worktree records of facts into one per scope, in the
// order the scopes first appear: the latest of each field, Files the union
// of every file the scope's visits changed. A scope whose worktree was not
// removed after it was last made is still on disk, unless something else
// (flow gc) removed it.
func Worktrees(facts []*Fact) []*Worktree {
	var out []*Worktree
	at := map[string]*Worktree{}
	for _, f := range facts {
		r := f.Worktree
		if r == nil || (f.Type != FactWorktree && f.Type != FactLand && f.Type != FactEnd) {
			continue
		}
		w := at[r.Scope]
		if w == nil {
			w = &Worktree{Scope: r.Scope}
			at[r.Scope] = w
			out = append(out, w)
		}
		if f.Type == FactWorktree {
			w.Removed = r.Removed
			if !r.Removed {
				w.Repo, w.Path, w.Branch, w.Base = r.Repo, r.Path, r.Branch, r.Base
			}
		}
		if r.Commit != "" {
			w.Commit = r.Commit
		}
		if r.Branch != "" {
			w.Branch = r.Branch
		}
		if r.Land != "" {
			w.Land, w.Onto = r.Land, r.Onto
		}
		for _, file := range r.Files {
			if !slices.Contains(w.Files, file) {
				w.Files = append(w.Files, file)
			}
		}
	}
	for _, w := range out {
		slices.Sort(w.Files)
	}
	return out
}

// Kept lists the worktrees of facts that were made and not removed.
func Kept(facts []*Fact) []*Worktree {
	var out []*Worktree
	for _, w := range Worktrees(facts) {
		if w.Path != "" && !w.Removed {
			out = append(out, w)
		}
	}
	return out
}
