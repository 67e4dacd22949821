//go:build !amd64

package engine

// The journal's prefetch was measured on amd64 only.
const canPrefetchForWriting = false

func prefetchForWriting(*byte, int) {}
