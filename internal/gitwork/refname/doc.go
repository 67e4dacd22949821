// Package refname owns the branch names a run gives in a repository
// (docs/worktrees.md): its integration branch flow/<run-id>, a branch per
// isolated scope, and a visit's pending branch. It is plain string
// functions, apart from package gitwork, which runs git, so that the
// Temporal workflow names branches without reaching programs or the disk
// (internal/archtest, TestTemporalWorkflowIsPureTransitively).
package refname
