package gitwork

import (
	"context"
	"fmt"
	"strings"
)

// Who commits for a run in a repository (docs/worktrees.md); the branches'
// names are package refname's.

// RunIdentity is who commits for a visit of a run: the run and the visit by
// name.
func RunIdentity(runID, visit string) Identity {
	return Identity{Name: "flow " + visit, Email: strings.ReplaceAll(runID, "/", "-") + "@flow.invalid"}
}

// CheckpointMessage is the message of the commit of what a visit changed.
func CheckpointMessage(runID, visit string) string {
	return fmt.Sprintf("flow: %s\n\nWhat visit %s of run %s changed.\n\nFlow-Run: %s\nFlow-Visit: %s\n", visit, visit, runID, runID, visit)
}

// Heads returns the commit checked out in the repository of each of dirs,
// by the repository's top-level directory; a directory that is not in a
// repository git can read is left out.
func Heads(ctx context.Context, dirs []string) map[string]string {
	var out map[string]string
	for _, d := range dirs {
		g, err := Open(ctx, d)
		if err != nil {
			continue
		}
		if head, err := g.Head(ctx); err == nil {
			if out == nil {
				out = map[string]string{}
			}
			out[g.Top] = head
		}
	}
	return out
}
