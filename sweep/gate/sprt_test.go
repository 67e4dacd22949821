package gate

import (
	"math/rand/v2"
	"testing"
)

// simulate runs gates of one task whose every trial succeeds with
// probability p, one trial a round as flow gate runs them, and counts the
// verdicts and the trials spent.
func simulate(rng *rand.Rand, test Test, p float64, maxTrials, gates int) (pass, fail, inconclusive int, trials float64) {
	for range gates {
		n, c := 0, 0
		v := Open
		for v == Open && n < maxTrials {
			n++
			if rng.Float64() < p {
				c++
			}
			v = test.Decide(n, c)
		}
		switch v {
		case Pass:
			pass++
		case Fail:
			fail++
		default:
			inconclusive++
		}
		trials += float64(n)
	}
	return pass, fail, inconclusive, trials / float64(gates)
}

// TestSimulatedErrorRates is the measurement docs/gate.md states: over
// 4,000 seeded gates a point, at --max-trials 20 (the default) and 50, a
// task exactly at the bar fails at most alpha of the time (false FAIL), a
// task at the bar less the margin passes at most alpha of the time (false
// PASS), and a task at the bar plus the margin fails less still.
func TestSimulatedErrorRates(t *testing.T) {
	const gates = 4000
	rng := rand.New(rand.NewPCG(39, 2026))
	for _, bar := range []float64{0.5, 0.8, 0.9, 0.95} {
		for _, alpha := range []float64{0.05, 0.1} {
			for _, maxTrials := range []int{20, 50} {
				test := Test{Bar: bar, Margin: 0.2, Alpha: alpha}
				_, falseFail, _, atBar := simulate(rng, test, bar, maxTrials, gates)
				falsePass, _, _, atLow := simulate(rng, test, test.Low(), maxTrials, gates)
				_, failAbove, _, _ := simulate(rng, test, min(bar+0.2, 1), maxTrials, gates)
				ff, fp, fa := float64(falseFail)/gates, float64(falsePass)/gates, float64(failAbove)/gates
				t.Logf("bar %.2f margin 0.2 alpha %.2f max %3d: false FAIL at the bar %.4f (mean %.1f trials), false PASS at %.2f %.4f (mean %.1f trials), FAIL at the bar + margin %.4f",
					bar, alpha, maxTrials, ff, atBar, test.Low(), fp, atLow, fa)
				if ff > alpha || fp > alpha || fa > alpha {
					t.Errorf("bar %.2f alpha %.2f max %d: false FAIL %.4f, false PASS %.4f, FAIL above %.4f; want each at most %.2f", bar, alpha, maxTrials, ff, fp, fa, alpha)
				}
			}
		}
	}
}

// exact is the probability of each verdict of a gate of one task whose
// trials succeed with probability p, computed over every path of at
// most maxTrials trials: no sampling error.
func exact(test Test, p float64, maxTrials int) (pass, fail float64) {
	live := []float64{1} // live[c]: still open after n trials with c successes
	for n := 1; n <= maxTrials; n++ {
		next := make([]float64, n+1)
		for c, q := range live {
			next[c] += q * (1 - p)
			next[c+1] += q * p
		}
		for c, q := range next {
			switch test.Decide(n, c) {
			case Pass:
				pass += q
				next[c] = 0
			case Fail:
				fail += q
				next[c] = 0
			}
		}
		live = next
	}
	return pass, fail
}

// TestExactErrorRates holds the bound where it is nearly reached: with
// room for 1,000 trials the test decides almost every gate, and its
// error rates come close to alpha — exactly computed, never above it.
func TestExactErrorRates(t *testing.T) {
	for _, bar := range []float64{0.3, 0.5, 0.8, 0.9, 0.95, 0.99} {
		for _, margin := range []float64{0.05, 0.1, 0.2} {
			for _, alpha := range []float64{0.01, 0.05, 0.1} {
				test := Test{Bar: bar, Margin: margin, Alpha: alpha}
				_, falseFail := exact(test, bar, 400)
				falsePass, _ := exact(test, test.Low(), 400)
				if falseFail > alpha || falsePass > alpha {
					t.Errorf("bar %.2f margin %.2f alpha %.2f: false FAIL %.4f, false PASS %.4f; want each at most alpha", bar, margin, alpha, falseFail, falsePass)
				}
				if bar == 0.8 && margin == 0.2 {
					t.Logf("bar 0.80 margin 0.20 alpha %.2f max 400: false FAIL %.4f, false PASS %.4f", alpha, falseFail, falsePass)
				}
			}
		}
	}
	// And the simulation agrees with the exact figure at the defaults.
	test := Test{Bar: 0.8, Margin: 0.2, Alpha: 0.05}
	_, want := exact(test, 0.8, 20)
	_, got, _, _ := simulate(rand.New(rand.NewPCG(1, 2)), test, 0.8, 20, 20000)
	if d := float64(got)/20000 - want; d > 0.005 || d < -0.005 {
		t.Errorf("simulated false FAIL %.4f, exact %.4f", float64(got)/20000, want)
	}
	t.Logf("bar 0.80 margin 0.20 alpha 0.05 max 20: exact false FAIL %.4f", want)
}

// TestDecidesFastAtTheDefaults is the acceptance's arithmetic: at
// --min-success 0.8 and the defaults, a task that always succeeds passes
// in 11 trials and one that never does fails in 5 — each within 12.
func TestDecidesFastAtTheDefaults(t *testing.T) {
	test := Test{Bar: 0.8, Margin: 0.2, Alpha: 0.05}
	first := func(success bool) int {
		c := 0
		for n := 1; n <= 100; n++ {
			if success {
				c++
			}
			if v := test.Decide(n, c); v != Open {
				if (v == Pass) != success {
					t.Fatalf("all %v: %s", success, v)
				}
				return n
			}
		}
		return 0
	}
	if n := first(true); n != 11 {
		t.Errorf("always succeeding: decided after %d trials, want 11", n)
	}
	if n := first(false); n != 5 {
		t.Errorf("never succeeding: decided after %d trials, want 5", n)
	}
}

func TestEdgeRates(t *testing.T) {
	// At a bar of 1, one failure is enough to fail.
	if v := (Test{Bar: 1, Margin: 0.2, Alpha: 0.05}).Decide(3, 2); v != Fail {
		t.Errorf("bar 1, a failure: %s", v)
	}
	// A bar below the margin: the fail hypothesis is a rate of 0, which one success refutes.
	if v := (Test{Bar: 0.1, Margin: 0.2, Alpha: 0.05}).Decide(1, 1); v != Pass {
		t.Errorf("bar 0.1, a success: %q", v)
	}
	pass, fail := (Test{Bar: 0.8, Margin: 0.2, Alpha: 0.05}).PValues(0, 0)
	if pass != 1 || fail != 1 {
		t.Errorf("no trials: p-values %g, %g; want 1, 1", pass, fail)
	}
	if got := BaselineRate(10, 10); got != 11.0/12 {
		t.Errorf("BaselineRate(10, 10) = %g", got)
	}
}
