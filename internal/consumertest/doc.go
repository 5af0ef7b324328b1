// Package consumertest holds the external-consumer test (checklist
// RTP-15, RG-06, PKG-11): the module is packed into the zip `go mod
// download` would serve, laid out as a local GOPROXY directory, and a
// fresh module outside this repository `go get`s it from there and runs a
// tool loop. It proves that the packed module, not this work tree, builds
// for a user: nothing reaches the consumer through a replace directive or
// a workspace.
//
// The test takes about a minute on a warm build cache and is skipped
// under -short. Two environment variables let scripts/release use it:
//
//   - AGENTRT_CONSUMER_ARCHIVE: a module zip to install instead of packing
//     the current commit (its module path and version are read from it);
//   - AGENTRT_COHORT_REPORT: a file to write the cohort report to: the
//     modules, versions and sums the consumer resolved, the input of
//     `agentrt conformance emit --cohort-report`.
//
// This file exists so the package has a non-test file; it declares
// nothing.
package consumertest
