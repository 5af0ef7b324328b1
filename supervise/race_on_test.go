//go:build race

package supervise_test

// raceEnabled: the race detector is on; long randomized tests run fewer
// sequences (the detector slows them five- to tenfold).
const raceEnabled = true
