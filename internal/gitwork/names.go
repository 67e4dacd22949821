package gitwork

import (
	"context"
	"fmt"
	"strings"
)

// The names a run gives in a repository (docs/worktrees.md): its integration branch
// flow/<run-id>, a branch per isolated scope, and who commits.

// IntegrationBranch is the branch a run lands its scopes on.
func IntegrationBranch(runID string) string { return "flow/" + refSafe(runID) }

// ScopeBranch is the branch of one isolated scope of a run. Git cannot
// hold flow/<run-id> and flow/<run-id>/<scope> at once (one ref would be a
// file and a directory), so a scope's branch is flow/<run-id>.<scope>.
func ScopeBranch(runID, scope string) string { return IntegrationBranch(runID) + "." + refSafe(scope) }

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

// refSafe makes a visit path usable in a branch name: look[2] becomes
// look-2 and review#2 review-2; anything else git refuses becomes -.
func refSafe(s string) string {
	s = strings.NewReplacer("[", "-", "]", "", "#", "-").Replace(s)
	out := []byte(s)
	for i, c := range out {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_-./@", c) >= 0
		if !ok || c == '.' && (i == 0 || out[i-1] == '/' || out[i-1] == '.') || c == '@' && i+1 < len(out) && out[i+1] == '{' {
			out[i] = '-'
		}
	}
	return strings.TrimSuffix(string(out), ".lock")
}

// PendingBranch is where a worker leaves what a visit in scope branch
// changed, until the run takes it as the scope's next checkpoint (on
// Temporal, the visit and its checkpoint may run on different machines).
func PendingBranch(branch, visit string) string {
	return branch + ".pending/" + strings.ReplaceAll(refSafe(visit), "/", "-")
}
