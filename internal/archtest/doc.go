// Package archtest enforces the layer rule of docs/DESIGN.md: a package never
// imports an agentrt package of a higher layer, contract packages (layers 0
// and 1) depend on nothing outside the standard library but an explicit
// allowlist, and test helpers stay out of production code. The rules live
// in layers.go; the test walks every Go file of the module. It also keeps
// two documents true of the code: examples/README.md lists every example
// program and names only Example functions that exist, and every package
// and Go name docs/canonical-api.md gives exists.
package archtest
