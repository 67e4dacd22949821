package engine

// prefetchForWriting asks the processor to bring the cache lines of
// p[:n] into its cache, owned for writing (PREFETCHW), and does not wait
// for them; n is a multiple of 64 and more than 0.
//
//go:noescape
func prefetchForWriting(p *byte, n int)
