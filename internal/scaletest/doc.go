// Package scaletest helps benchmarks prove that a reader's cost grows
// linearly with its input on a machine other work shares: CPU reports
// the process's CPU time per operation (user plus system), which other
// processes' load does not inflate the way it inflates wall time.
//
// It is test-only: it may be imported only from _test.go files.
package scaletest
