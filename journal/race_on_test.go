//go:build race

package journal_test

// raceEnabled: the race detector is on, and its sync.Pool drops items at
// random, so allocation counts that rest on a pool do not hold.
const raceEnabled = true
