// Package providertest is the conformance suite every agentrt provider runs
// from its own tests: providertest.Run(t, factory, options). Scenario names
// are the reference testkit's where one exists (provider-shape,
// capabilities, capability-exposure, create-idempotency, stream, …), so a
// result reads the same in both ecosystems.
//
// One scenario no other kit has: capability-exposure fails a provider
// whose declared capabilities and implemented interfaces disagree in
// either direction — an ability declared but not implemented, or
// implemented but not declared — which makes "optional methods are absent
// when their capability is false" checkable in Go.
package providertest
