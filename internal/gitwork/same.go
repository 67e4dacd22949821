package gitwork

import "context"

// SameRepo reports whether the directories a and b are in one repository
// (the same common git directory: a worktree is in its repository's).
func SameRepo(ctx context.Context, a, b string) bool {
	ra, err := Open(ctx, a)
	if err != nil {
		return false
	}
	rb, err := Open(ctx, b)
	return err == nil && ra.common == rb.common
}
