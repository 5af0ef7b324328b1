//go:build !race

package supervise_test

// raceEnabled: the race detector is off.
const raceEnabled = false
