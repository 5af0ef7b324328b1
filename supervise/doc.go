// Package supervise coordinates a tree of workers under one conserved
// budget (spec/runtime.md §3.6). This slice is the pure, in-process core
// the rest of supervise builds on: the Scope that admits or refuses every
// spawn, the deterministic node ids and lifecycle, and the truthful
// totals of a tree.
//
// A Scope sits over a ledger.Pool. Every admitted spawn reserves its
// ceiling (the request's budget merged per field over ScopeOptions.PerWorker)
// before anything runs; Settle commits what was observed and frees the
// rest. A refused spawn changes nothing: no reservation, no sequence
// number, no live slot. Refusals are *Refusal values whose Code is one of
// the spec's codes (usd-unbudgeted, budget-exhausted, depth-exceeded,
// duplicate-key, in-doubt, invalid-identity, key-conflict,
// max-live-workers, scope-aborted, scope-settled, preflight-refused,
// resume-no-prior, resume-while-live, resume-with-key).
//
// Node ids are deterministic: the child admitted with scope sequence n
// under parent p is "p:sn", counted in admission order and never from a
// clock. Nodes move through pending, acquiring, running, waiting, done,
// failed and cancelled by legal transitions only.
//
// Unknown is never zero. Totals reports spentTotal with explicit
// TokensKnown and USDKnown, and SpendGaps names every node that never
// settled (charged at its ceiling) or settled without reporting a
// channel.
//
// The executor port, the journal, resume across processes, the
// coordination verbs and the CLI are built on this package elsewhere.
package supervise
