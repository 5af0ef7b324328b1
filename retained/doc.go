// Package retained runs agent work that must outlive the process that
// started it (spec/runtime.md §3.8; checklist FD-08, RES-05, RES-06).
//
// The provider owns and runs the job; the caller keeps a plain-data claim
// ticket, a ControlRef, from which any process sharing the run store can
// re-attach (ReconnectRetainedRun) or recover (RecoverRetainedRun).
//
// Starting a retained run admits it in three records, each durable in the
// run store before anything about it becomes visible to the caller:
//
//  1. intent — who asks for what (digests only, no secrets), before the
//     environment is created;
//  2. environment — the environment that will hold the run, before the
//     turn is dispatched;
//  3. dispatched — the exact control reference of the dispatched run,
//     after the provider confirmed it.
//
// After each record is durable the caller's required OnAdmission hook is
// awaited; StartRetainedRun returns only after the dispatched hook
// returned. The records live in the run store as the document of a run
// record of kind "retained" (store.Store), so SQLite and PostgreSQL hold
// them with no schema of their own.
//
// A turn on a seat of a subscription profile carries the stage's
// credential request (contract.CredentialRequest: stage, harness,
// provider, model and account selector — all-eligible, or the name of one
// seat account). It is no part of the turn's canonical form, so the
// intent records it separately (Intent.Credential, a CredentialRecord):
// it is an account reference the provider's account owner resolves, not
// a credential, and holds no secret to leak. RecoverRetainedRun in
// another process therefore re-dispatches with the recorded request even
// when the caller passes the turn without it (RG-09), and refuses one
// that names another account; the secret the account owner binds never
// reaches the runtime, so never the store.
//
// Identity is deterministic: omitted session and execution ids are derived
// from (idempotency key, turn id), so every process derives the same ones,
// and starting again with the same options continues the same run rather
// than making a second one.
//
// The handle (Run) reads status, events (contiguous sequences whose replay
// anchor is checked, never silently skipped), the result, answers
// interactions and cancels with an operation id whose effect the provider
// applies once. An outcome the provider does not prove stays unknown.
package retained
