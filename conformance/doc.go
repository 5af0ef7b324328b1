// Package conformance emits and verifies the release conformance manifest
// (spec/runtime.md §8): for one exact module archive, which owner-named
// capabilities its own tests proved, with every test file and case that
// produced each answer, content-addressed so that any edit is detectable.
//
// The Go mapping of §8:
//
//   - the archive is the module zip of the release commit, as `go mod
//     download` would serve it (golang.org/x/mod/zip); its name and version
//     are the module path and the release version;
//   - the cohort report is what an external consumer's module resolution
//     produced (modules, versions, sums), kept verbatim;
//   - the environment is the Go version and GOOS-GOARCH that ran the tests;
//   - evidence is a _test.go file and the `go test` names of its cases
//     ("TestX" or "TestX/sub/step"), run with `go test -json`;
//   - release/cohort.json pins module versions with their full source
//     commits and [CheckCohort] rejects a report that disagrees.
//
// conformance/capabilities.json is the one hand-authored file; everything
// downstream of it is mechanical. Every digest is the lowercase hex SHA-256
// of canonical JSON (package canonjson) or of raw file bytes; the manifest
// carries no timestamps, run ids or durations, so identical inputs give an
// identical manifest.
//
// Status resolution is deliberately one-way: a capability is supported
// only when it has at least one case and every case passed; any failed
// case makes it unsupported; anything else (no cases, a case the run did
// not report, a skipped case) leaves it unproven. A capability is never
// narrowed into a pass.
package conformance
