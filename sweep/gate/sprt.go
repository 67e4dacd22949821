package gate

import "math"

// Verdict is a task's verdict; "" while it is open.
type Verdict string

// The verdicts.
const (
	Open         Verdict = ""
	Pass         Verdict = "PASS"
	Fail         Verdict = "FAIL"
	Inconclusive Verdict = "INCONCLUSIVE"
)

// Test is Wald's sequential probability ratio test of one task's success
// rate p: the pass hypothesis p = Bar against the fail hypothesis p =
// Bar − Margin (at least 0). After each round the log-likelihood ratio of
// the trials so far is compared with ln(1/Alpha): PASS at or above it,
// FAIL at or below its negative. Those are Ville's bounds rather than
// Wald's approximations: under either hypothesis the likelihood ratio
// against it is a nonnegative martingale, so the chance it ever reaches
// 1/Alpha is at most Alpha — at p = Bar the gate fails a task with
// probability at most Alpha, at p = Bar − Margin it passes one with
// probability at most Alpha, whenever it looks and wherever it stops
// (docs/gate.md). The rates in between are the indifference zone, where
// either verdict is acceptable and INCONCLUSIVE is likely.
type Test struct {
	Bar    float64
	Margin float64
	Alpha  float64
}

// Low is the fail hypothesis's rate, Bar − Margin (at least 0).
func (t Test) Low() float64 { return max(t.Bar-t.Margin, 0) }

// LLR is the log-likelihood ratio of c successes in n trials: the rate
// Bar against the rate Low. An outcome impossible under one of them is
// ±Inf.
func (t Test) LLR(n, c int) float64 {
	p1, p0 := t.Bar, t.Low()
	var llr float64
	if f := n - c; f > 0 {
		if p1 >= 1 {
			return math.Inf(-1) // a failure: the rate is not 1
		}
		llr += float64(f) * math.Log((1-p1)/(1-p0))
	}
	if c > 0 {
		if p0 <= 0 {
			return math.Inf(1) // a success: the rate is not 0
		}
		llr += float64(c) * math.Log(p1/p0)
	}
	return llr
}

// Decide is the verdict after c successes in n trials: Open until the
// likelihood ratio leaves (Alpha, 1/Alpha).
func (t Test) Decide(n, c int) Verdict {
	bound := math.Log(1 / t.Alpha)
	switch llr := t.LLR(n, c); {
	case llr >= bound:
		return Pass
	case llr <= -bound:
		return Fail
	}
	return Open
}

// PValues are the anytime-valid p-values of c successes in n trials: of
// the hypothesis that the rate is Low or below (a PASS rejects it when
// pass ≤ Alpha), and of the hypothesis that it is Bar or above (a FAIL
// rejects it when fail ≤ Alpha). Each is the inverse of a likelihood
// ratio, valid at any stopping time by the same martingale argument.
func (t Test) PValues(n, c int) (pass, fail float64) {
	llr := t.LLR(n, c)
	return min(1, math.Exp(-llr)), min(1, math.Exp(llr))
}
