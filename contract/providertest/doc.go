// Package providertest is the conformance suite every agentrt provider runs
// from its own tests: providertest.Run(t, factory, options). Scenario names
// are the reference testkit's where one exists (spec L.1-L.6), so a result
// reads the same in both ecosystems:
//
//   - provider contract (L.1): provider-shape, capabilities,
//     capability-exposure, create-readiness, create-idempotency,
//     create-idempotency-collision, stream, dispatch (with
//     Options.RequireDispatch as the testkit's requireDispatch),
//     native-continuation-operations, workspace-read-write and
//     workspace-exec;
//   - session-replay (L.2): detach-control-reference,
//     competing-run-isolation, stable-event-ids, same-client-replay,
//     reconnected-replay;
//   - interaction-response (L.3), once for the environment's responder and
//     once for a session's: wrong-bindings, invalid-response, accepted,
//     operation-replay, same-response, different-response-conflict,
//     expired, cancelled, transport_failure;
//   - portable-context (L.4): side-effect-free-plan,
//     rejected-plan-zero-dispatch, mismatched-plan-zero-dispatch,
//     accepted-transfer-receipt, transfer-replay-conflict,
//     continuation-boundary-rejection, verified-native-continuation,
//     continuation-replay-conflict;
//   - workspace-branching (L.5): checkpoint-retry, checkpoint-recovery,
//     checkpoint-conflict, fork-retry, fork-recovery, fork-conflict,
//     cleanup-dependency-order, cleanup-operation-conflict,
//     confirmed-cleanup, cleanup-lookup;
//   - exact-process-lifecycle (L.6, runAgentExactProcessProviderLifecycleChecks,
//     configured by Options.ExactProcess): exact-process-capability,
//     exact-process-idempotency, exact-process-idempotency-collision,
//     fresh-environment, exact-file-roundtrip, exact-process-run,
//     exact-process-recovery, exact-process-list, exact-process-destroy.
//
// Scenarios and steps no testkit has are named in the same style:
// create-idempotency-concurrent, profile-validation, observation,
// legacy-branching, destroy; the cancellation-acknowledgement family
// (cancel-accepted, cancel-replay, cancel-conflict, cancel-unknown-run) for
// retained control, which the testkit does not cover; and the steps
// answered-turn-completes, transfer-lookup and branching-recovery, which
// prove recovery through a reconnected client (Options.Reconnect).
//
// A scenario about an ability the provider does not declare skips with the
// reason. A declared ability must be proven: when a family needs an input
// only the provider's test can give — how to make it originate an
// interaction request, how to read its effect counters — the family fails
// without it. Like the testkit, the exact-process family does not certify
// network isolation, secret handling or process-tree behaviour; a provider
// proves those on its real infrastructure.
//
// One scenario no other kit has: capability-exposure fails a provider
// whose declared capabilities and implemented interfaces disagree in
// either direction — an ability declared but not implemented, or
// implemented but not declared — which makes "optional methods are absent
// when their capability is false" checkable in Go.
//
// Probe runs one scenario under a recording test, so a provider's tests
// can prove the suite has teeth: a provider broken in one rule must fail
// the step that covers it. Check runs every scenario the same way with no
// test at all, for a program or an Example (ExampleCheck is a complete
// tiny provider).
package providertest
