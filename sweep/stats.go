package sweep

import (
	"math"
	"math/big"
	"slices"
)

// The statistics a sweep reports (docs/sweeps.md). Each is the textbook
// form evaluators use; stats_test.go checks them against values worked out
// by hand.

// z95 is the standard normal quantile for a two-sided 95% interval.
const z95 = 1.959963984540054

// Wilson returns the Wilson score interval at 95% for c successes in n
// trials. Unlike the normal approximation it stays inside [0, 1] and is
// not degenerate at 0 or n successes, which small sweeps hit all the time.
// With n = 0 there is no evidence: the interval is [0, 1].
func Wilson(c, n int) (low, high float64) {
	if n <= 0 {
		return 0, 1
	}
	nf, p := float64(n), float64(c)/float64(n)
	z2 := z95 * z95
	den := 1 + z2/nf
	center := (p + z2/(2*nf)) / den
	half := z95 / den * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf))
	return max(0, center-half), min(1, center+half)
}

// PassAtK is the unbiased estimate of pass@k for one task with c successes
// in n runs: the chance that at least one of k runs drawn without
// replacement succeeds, 1 − C(n−c, k)/C(n, k). It needs k ≤ n.
func PassAtK(n, c, k int) float64 {
	if n-c < k {
		return 1
	}
	// C(n−c, k)/C(n, k) = Π_{i<k} (n−c−i)/(n−i): no factorials to overflow.
	q := 1.0
	for i := range k {
		q *= float64(n-c-i) / float64(n-i)
	}
	return 1 - q
}

// PassHatK is the unbiased estimate of pass^k for one task with c
// successes in n runs: the chance that all of k runs drawn without
// replacement succeed, C(c, k)/C(n, k) — not p^k. It needs k ≤ n.
func PassHatK(n, c, k int) float64 {
	if c < k {
		return 0
	}
	q := 1.0
	for i := range k {
		q *= float64(c-i) / float64(n-i)
	}
	return q
}

// McNemar returns the exact two-sided p-value of McNemar's test for paired
// outcomes with b pairs where only the first succeeded and c where only
// the second did: under the null hypothesis the discordant pairs split
// like fair coin flips, so p = min(1, 2·P[X ≤ min(b, c)]) for X ~ Bin(b+c,
// 1/2). With no discordant pair nothing tells the two apart: p = 1.
func McNemar(b, c int) float64 {
	n := b + c
	if n == 0 {
		return 1
	}
	// Exactly, in integers: 2·Σ_{i≤min(b,c)} C(n, i) / 2^n.
	term, tail := big.NewInt(1), big.NewInt(1)
	for i := 0; i < min(b, c); i++ {
		term.Mul(term, big.NewInt(int64(n-i)))
		term.Quo(term, big.NewInt(int64(i+1)))
		tail.Add(tail, term)
	}
	p, _ := new(big.Rat).SetFrac(tail.Lsh(tail, 1), new(big.Int).Lsh(big.NewInt(1), uint(n))).Float64()
	return min(1, p)
}

// Percentile returns the p-th quantile (0 ≤ p ≤ 1) of xs by linear
// interpolation between the closest ranks (the usual "type 7" definition,
// as numpy's default). It reports false for no values.
func Percentile(xs []int64, p float64) (float64, bool) {
	if len(xs) == 0 {
		return 0, false
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	h := float64(len(s)-1) * p
	lo := int(math.Floor(h))
	if lo+1 >= len(s) {
		return float64(s[lo]), true
	}
	return float64(s[lo]) + (h-float64(lo))*float64(s[lo+1]-s[lo]), true
}
