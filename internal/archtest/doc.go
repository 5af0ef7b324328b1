// Package archtest enforces the layer rule of docs/DESIGN.md: a package never
// imports an agentrt package of a higher layer, contract packages (layers 0
// and 1) depend on nothing outside the standard library but an explicit
// allowlist, and test helpers stay out of production code. The rules live
// in layers.go; the test walks every Go file of the module.
package archtest
