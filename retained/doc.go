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
// credential request (contract.CredentialRequest). It names no secret —
// the provider's account owner binds the credential (RG-10) — but its
// selector names an account, which agentrt never records, and it is no
// part of the turn's canonical form. The intent records the stage it
// asked for (Intent.CredentialStage) and, when the caller gives a
// CredentialKey, a keyed digest of the request, selector included
// (Intent.CredentialDigest, HMAC-SHA256) — never the selector: a plain
// hash of an account name is found by trying each name, a keyed one
// tells nothing without the key. A recovery that re-dispatches the turn
// (or replays the create) in another process re-sends that stage's
// request: the one the caller gives, or the one rebuilt from the seated
// profile (RecoverOptions.Profile) (RG-09). A request for another stage,
// or none, is refused before anything is dispatched, never sent without
// it; so is one whose digest under RecoverOptions.CredentialKey is not
// the admitted one — the profile's selector for the stage changed since
// the admission, which neither the stage nor the profile digest shows:
// the recovery is Unverifiable with a *CredentialChangedError as its
// Cause, naming the stage and never the selector, nothing sent under
// another account and nothing destroyed (a seated start again with that
// profile is a *MismatchError). The intent also names the key
// (Intent.CredentialKeyID, a keyed digest of a fixed text), so a
// recovery given another key is Unverifiable with a *CredentialKeyError
// instead: the account cannot be checked, nothing is sent, and a changed
// selector is never confused with a wrong key. A record without a digest — made before
// digests were, or by a caller without a key — is recovered as before,
// checked for its stage only. A replay is the admitted request (RG-12):
// a turn admitted without a credential request is re-sent without one,
// and AdmittedRequest rebuilds what an admission recorded — an older
// one, recorded before runs recorded their stage, created its
// environment with the whole authored profile, on which its turn relied
// — never what the profile would ask for today.
//
// StartSeated walks a seated profile's seat chain as retained runs, each
// stage with admission records of its own: a typed quota refusal moves
// on to the next stage under the same logical id, node, turn id and
// deadline (RG-08, RG-11). When the refusal broke a turn off in a session
// the provider named and the kernel's rule proves the next stage can go
// on in it (kernel.SameProvider: the stage runs on the very provider
// holding the session; kernel.OpenNativeSession, kernel.ProveNativeBoundary), the
// next stage is that session's native continuation (ContinueNativeRetained:
// the same environment and native session, recorded ContinuityNative);
// otherwise it starts fresh in an environment of its own, recorded with
// the rule's reason. Starting again replays each stage, a native one by
// sending its recorded continuation again.
//
// The dispatched run's native session — the provider's own conversation
// id, which its session reports to the run's owner
// (contract.NativeSessionReporter) — is bound to the record under the
// run's execution id (Record.Native; NSO-02) when the handle is built,
// and never appears among the run's events (NSO-03).
//
// Recovery never reports not_found while the provider may hold something
// of the run: a starter that died after its intent was recorded and
// before its environment record was written may have had its environment
// created under the idempotency key, so recovery reports unverifiable
// unless it is given the create input (RecoverOptions.Environment), whose
// keyed create it replays (ENV-10): the environment the provider answers
// with is recorded and the run continues from it. A run started in an
// existing environment created nothing, and is not_found.
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
//
// Every store call — admission, recovery, and each the handle makes —
// is bounded by 30 s even for a caller without a deadline; a store that
// fails or does not answer is a *kernel.StoreError naming the run and
// the call. Cancel's are bounded by a few seconds
// (DefaultCancelStoreTimeout, or CancelRequest.StoreTimeout), and a
// store that does not bind the operation id in time makes the outcome
// unknown (a *CancelUnknownError), never a claimed cancellation. The handle's events end when the caller's context does
// (within EventsGrace, whatever the provider's stream does) with an
// *EventsStoppedError carrying the cursor to resume from.
package retained
