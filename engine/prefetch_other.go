//go:build !amd64

package engine

// prefetchForWriting does nothing where the journal's prefetch was not
// measured.
func prefetchForWriting(*byte, int) {}
