// Package ledger keeps agentrt's accounts truthful: usage aggregation that
// honors how providers report it, per-run cost ledgers that reconcile, and
// the conserved budget pool that concurrent workers draw from.
//
// Two rules hold everywhere. Unknown is never zero: a quantity nobody
// measured is marked unknown, and a sum that includes an unknown part is a
// floor, not a total. Capacity is conserved: for every channel, total =
// free + reserved + committed at all times, a worker reserves before it
// spends, settles after, and nothing — not a refund, not a restart — ever
// mints capacity that was not there.
//
// The pool counts in integers (tokens, iterations, micro-dollars, named
// resource units) so the conservation identity is exact.
package ledger
