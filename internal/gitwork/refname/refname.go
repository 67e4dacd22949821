package refname

import "strings"

// IntegrationBranch is the branch a run lands its scopes on.
func IntegrationBranch(runID string) string { return "flow/" + refSafe(runID) }

// ScopeBranch is the branch of one isolated scope of a run. Git cannot
// hold flow/<run-id> and flow/<run-id>/<scope> at once (one ref would be a
// file and a directory), so a scope's branch is flow/<run-id>.<scope>.
func ScopeBranch(runID, scope string) string { return IntegrationBranch(runID) + "." + refSafe(scope) }

// PendingBranch is where a worker leaves what a visit in scope branch
// changed, until the run takes it as the scope's next checkpoint (on
// Temporal, the visit and its checkpoint may run on different machines).
func PendingBranch(branch, visit string) string {
	return branch + ".pending/" + strings.ReplaceAll(refSafe(visit), "/", "-")
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
