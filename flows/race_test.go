//go:build race

package flows

// raceSlowdown is how much slower the race detector makes the loader: time
// bounds in tests are multiplied by it.
const raceSlowdown = 10
