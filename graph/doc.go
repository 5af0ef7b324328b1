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
// edge reaches. Each settle of a node it is over (a worker that finished
// with output) spawns the analyst's pinned profile with the edge's
// directive and that output as its task; the analyst's own output is the
// findings, delivered to the root (as a "finding" event from Await) or
// steered into the live worker of the destination node. Findings are
// never a deliverable. Registry lenses (pure analyst functions of the
// environment) are not run yet: an analyzes edge naming a lens id is
// refused.
//
// Everything is validated before anything is spent (Validate); every
// refusal is a *ValidationError naming the offending path or a
// *ConfigError naming the offending option field.
package graph
