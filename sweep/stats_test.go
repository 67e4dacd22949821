package sweep

import (
	"math"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// The expected values below are worked out by hand from the definitions
// (the working is in each comment), not by the code under test.
func TestWilson(t *testing.T) {
	tests := []struct {
		c, n      int
		low, high float64
	}{
		// p = 1/2, n = 10, z² = 3.841458821: center = (0.5 + 0.192073)/1.384146 = 0.5;
		// half = 1.959964/1.384146 · sqrt(0.025 + 0.009603647) = 0.263437.
		{5, 10, 0.2365931186, 0.7634068814},
		// c = n = 9: center = (1 + 0.213414)/1.426829 = 0.850427; half = 1.373636 · 0.108910 = 0.149573.
		{9, 9, 0.7008550854, 1},
		// c = 0, n = 9: the mirror image.
		{0, 9, 0, 0.2991449146},
		// c = 6, n = 9: center = (0.666667 + 0.213414)/1.426829 = 0.616809;
		// half = 1.373636 · sqrt(0.024691 + 0.011856) = 1.373636 · 0.191174 = 0.262607.
		{6, 9, 0.3542021356, 0.8794161816},
		{0, 0, 0, 1},
	}
	for _, tt := range tests {
		low, high := Wilson(tt.c, tt.n)
		if math.Abs(low-tt.low) > 1e-6 || math.Abs(high-tt.high) > 1e-6 {
			t.Errorf("Wilson(%d, %d) = [%.10f, %.10f], want [%.10f, %.10f]", tt.c, tt.n, low, high, tt.low, tt.high)
		}
	}
}

func TestPassAtKAndPassHatK(t *testing.T) {
	tests := []struct {
		n, c, k         int
		passAt, passHat float64
	}{
		// n = 3, c = 2, k = 3: C(1,3) = 0 so pass@3 = 1; C(2,3) = 0 so pass^3 = 0.
		{3, 2, 3, 1, 0},
		{3, 3, 3, 1, 1},
		{3, 0, 3, 0, 0},
		// n = 5, c = 2, k = 2: pass@2 = 1 − C(3,2)/C(5,2) = 1 − 3/10; pass^2 = C(2,2)/C(5,2) = 1/10.
		{5, 2, 2, 0.7, 0.1},
		// n = 10, c = 5, k = 3: pass@3 = 1 − C(5,3)/C(10,3) = 1 − 10/120; pass^3 = 10/120.
		{10, 5, 3, 1 - 10.0/120, 10.0 / 120},
		// k = 1 is the success rate.
		{4, 1, 1, 0.25, 0.25},
	}
	for _, tt := range tests {
		if got := PassAtK(tt.n, tt.c, tt.k); !near(got, tt.passAt) {
			t.Errorf("PassAtK(%d, %d, %d) = %v, want %v", tt.n, tt.c, tt.k, got, tt.passAt)
		}
		if got := PassHatK(tt.n, tt.c, tt.k); !near(got, tt.passHat) {
			t.Errorf("PassHatK(%d, %d, %d) = %v, want %v", tt.n, tt.c, tt.k, got, tt.passHat)
		}
	}
}

func TestMcNemar(t *testing.T) {
	tests := []struct {
		b, c int
		p    float64
	}{
		{0, 0, 1},
		{3, 0, 0.25},          // 2 · C(3,0)/8
		{0, 6, 0.03125},       // 2 · 1/64
		{1, 5, 0.21875},       // 2 · (1 + 6)/64
		{2, 2, 1},             // 2 · (1 + 4 + 6)/16 > 1
		{1, 9, 0.021484375},   // 2 · (1 + 10)/1024
		{10, 2, 0.0385742188}, // 2 · (1 + 12 + 66)/4096
	}
	for _, tt := range tests {
		if got := McNemar(tt.b, tt.c); math.Abs(got-tt.p) > 1e-9 {
			t.Errorf("McNemar(%d, %d) = %.10f, want %.10f", tt.b, tt.c, got, tt.p)
		}
	}
}

func TestPercentile(t *testing.T) {
	xs := []int64{40, 10, 30, 20} // sorted: 10 20 30 40
	tests := []struct {
		p, want float64
	}{
		{0.5, 25},    // h = 1.5: 20 + 0.5·10
		{0.95, 38.5}, // h = 2.85: 30 + 0.85·10
		{0, 10},
		{1, 40},
	}
	for _, tt := range tests {
		if got, ok := Percentile(xs, tt.p); !ok || !near(got, tt.want) {
			t.Errorf("Percentile(%v, %v) = %v, want %v", xs, tt.p, got, tt.want)
		}
	}
	if got, ok := Percentile([]int64{7}, 0.95); !ok || got != 7 {
		t.Errorf("one value: %v", got)
	}
	if _, ok := Percentile(nil, 0.5); ok {
		t.Error("no values gave a percentile")
	}
}
