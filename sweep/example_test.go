package sweep_test

import (
	"fmt"

	"github.com/flowrun/flow/sweep"
)

// Six successes in nine runs: the interval is wide, as it should be.
func ExampleWilson() {
	low, high := sweep.Wilson(6, 9)
	fmt.Printf("%.3f–%.3f\n", low, high)
	// Output: 0.354–0.879
}

// A task solved in 2 of 3 runs: some run of three succeeds for sure
// (pass@3), all three never do (pass^3), though 0.667³ would say 0.296.
func ExamplePassHatK() {
	fmt.Println(sweep.PassAtK(3, 2, 3), sweep.PassHatK(3, 2, 3))
	// Output: 1 0
}

// Three runs lost against the baseline and none won: p = 2 · (1/2)³.
func ExampleMcNemar() {
	fmt.Println(sweep.McNemar(3, 0))
	// Output: 0.25
}
