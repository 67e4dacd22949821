package engine

// prefetchForWriting asks the processor to bring the cache lines of
// p[:n] into its cache, owned for writing (PREFETCHW), and does not wait
// for them; n is a multiple of 64 and more than 0. Call it only where
// canPrefetchForWriting.
//
//go:noescape
func prefetchForWriting(p *byte, n int)

// cpuHasPrefetchW says whether the processor knows PREFETCHW (CPUID
// 0x80000001, ECX bit 8): AMD's always have, Intel's since 2014.
func cpuHasPrefetchW() bool

var canPrefetchForWriting = cpuHasPrefetchW()
