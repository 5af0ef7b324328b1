// Package graph runs a fixed agent topology expressed as data (spec
// runtime §3.7, runGraph): profiles as nodes, registry-backed directives
// as edges, one mandatory deliverable and one conserved budget.
//
// It is not a second scheduler. RunGraph interprets exactly one
// supervise.Supervise run: the root node is the manager, every worker
// node is spawnable by its id, and the graph adds what a bare supervised
// run lacks:
//
//   - node pinning: a spawn names a node (profile.name == node id) and
//     the node's canonical profile is what runs — a driver cannot
//     smuggle capabilities into a worker it did not define;
//   - observable edges: every delegates and analyzes traversal is a
//     LedgerRow (delivered, stripped, empty or unpropagated, with byte
//     counts) on the result and an edge record in the run's journal;
//   - directives as data: edge text lives in a Registry under
//     versioned handles (<surface>/v<n>);
//   - per-edge traversal caps: a delegates edge whose cap is spent
//     refuses further spawns, and a run that then ends without a winner
//     fails loud with a *GraphEdgeCapError carrying the ledger.
//
// Analysts: an analyzes edge's analyst is a graph node that no delegates
// edge reaches, or a registry lens (supervise.BuiltinLenses plus
// Supervise.Analysts; an id that is both is refused as ambiguous). Each
// settle of a node it is over (a worker that finished with output)
// spawns the analyst node's pinned profile with the edge's directive and
// that output as its task, or runs the lens over that worker
// (supervise's run_analyst: a keyed analyst worker charged to the one
// pool); the analyst's output is the findings, delivered to the root (as
// a "finding" event from Await) or steered into the live worker of the
// destination node — a lens's opened by the edge's directive, an analyst
// node's bare, since the directive opened the analyst's own task and
// instructs no one else. Findings are never a deliverable. An analyst
// run that fails or is cancelled routes nothing; its traversal, charged
// at its spawn, is ledgered unpropagated with the reason, never missing.
//
// Resume: with Supervise.RunDir (or Supervise.SpawnStore and RunID, the
// journal kept in a run store under a lease) and Supervise.Resume,
// RunGraph continues the graph run that journal holds. Supervise replays the settled
// workers; the graph restores its ledger, traversal counts, spent and
// exhausted caps from the journal's edge records (each records whether
// it spent a traversal), so settled nodes and completed analyses are not
// run again and no cap starts afresh; an analyst (node or lens) the dead
// process left running whose outcome cannot be recovered (in doubt) is
// ledgered unpropagated, its charged traversal never missing from the
// ledger, and findings the journal shows routed are never routed again. The router root's conversation is
// journaled turn by turn as a supervise router manager's is
// (supervise.RouterBrain.DriveTools over the graph's verbs), so a
// resumed root goes on from what it said and what its tools returned:
// it is not asked a recorded turn again, nor does it delegate again what
// it delegated, and a call of its work tools (Supervise.ExtraTools and
// ResolveSupervisorTools, forwarded; a caller's Brain gets them from
// Driver.ExtraTools and Driver.NodeTools) that it runs again is answered
// from the journal, or in doubt, never run twice; a caller's Brain
// resumes as it chooses. A journal of another topology is
// refused before anything runs — the run journals its topology (each
// node's profile digest, each edge with its directive's text digest,
// cap and continuity) when its brain first starts, and a resume whose
// graph or directives differ in any of them is refused — and so is a graph whose budget is not
// exactly the journaled one (a restart never mints capacity) or whose
// brief no longer ends the journaled root task: a *supervise.ResumeError,
// wrapping a *supervise.ResumeMismatchError when one value differs. An
// empty Options.Task adopts the journaled task; another is refused.
// JournaledTask reads it back without resuming.
//
// Directives: BuiltinRegistry holds delegate/…/v1 and analyze/…/v1
// directives a graph may name without a registry of its own (it is
// the registry of an Options whose Registry is nil); Registry.With
// layers a caller's over them.
//
// Everything is validated before anything is spent (Validate); every
// refusal is a *ValidationError naming the offending path or a
// *ConfigError naming the offending option field.
package graph
