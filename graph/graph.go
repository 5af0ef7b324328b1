package graph

import (
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/supervise"
)

// DefaultMaxTraversals is an edge's traversal cap when it names none:
// the cyclic-graph backstop.
const DefaultMaxTraversals = 32

// SpawnTool is the tool the root node must declare: the graph delegates
// only through spawn_worker.
const SpawnTool = supervise.ToolPrefix + supervise.VerbSpawnWorker

// Node is a graph node: an id and its canonical profile, the only
// description of the node. Profile.Name must equal ID.
type Node struct {
	ID      string
	Profile *profile.Profile
}

// EdgeKind is delegates or analyzes.
type EdgeKind string

// Edge kinds.
const (
	// Delegates: work flows down from From to To. Each spawn of To and
	// each mid-run steer of a live To worker is one traversal.
	Delegates EdgeKind = "delegates"
	// Analyzes: findings flow from Analyst, run over the settles of the
	// Over nodes, to To.
	Analyzes EdgeKind = "analyzes"
)

// Continuity of a delegates edge's spawns, and of a ledger row.
const (
	// ContinuityFresh starts every spawn of the edge afresh (the default).
	ContinuityFresh = "fresh"
	// ContinuityResume re-attaches each spawn after the node's first to
	// its latest settled session.
	ContinuityResume = "resume"
	// ContinuitySteer marks a ledger row delivered into an already-live
	// recipient (a steer, a finding).
	ContinuitySteer = "steer"
)

// Edge is one typed edge. Delegates edges use From, To, Directive,
// MaxTraversals and Continuity; analyzes edges use Analyst, Over, To,
// Directive and MaxTraversals. A nil MaxTraversals is
// DefaultMaxTraversals; a delegates cap is at least 1, an analyzes cap
// may be 0 (it only ledgers: every finding past it is unpropagated).
type Edge struct {
	Kind          EdgeKind
	From          string
	To            string
	Analyst       string
	Over          []string
	Directive     string
	MaxTraversals *int
	// Continuity is "" (fresh), fresh or resume; analyzes edges carry
	// none.
	Continuity string
}

// ID is the edge's stable id: delegates:<from>-><to> or
// analyzes:<analyst>:<over joined by +>-><to>.
func (e Edge) ID() string {
	if e.Kind == Analyzes {
		return "analyzes:" + e.Analyst + ":" + strings.Join(e.Over, "+") + "->" + e.To
	}
	return string(e.Kind) + ":" + e.From + "->" + e.To
}

func (e Edge) limit() int {
	if e.MaxTraversals == nil {
		return DefaultMaxTraversals
	}
	return *e.MaxTraversals
}

// Graph is a topology as data. Deliverable (the termination oracle) and
// Budget (the one conserved pool; it needs token and iteration ceilings)
// are mandatory.
type Graph struct {
	Nodes       []Node
	Edges       []Edge
	Deliverable supervise.Deliverable
	Budget      *ledger.Budget
	// LegacyBudgetKeys says the document Decode read wrote its budget
	// with the old keys {tokens, iterations, usd} rather than the
	// canonical ones of spec §2.1 (maxTokens, maxIterations, maxUsd?,
	// resources?); a refusal about the budget then names the old keys.
	// It does not change the pool.
	LegacyBudgetKeys bool
}

// handlePattern is a directive handle: <surface>/v<n>.
var handlePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*(/[a-z0-9][a-z0-9._-]*)*/v[1-9][0-9]{0,8}$`)

// ValidHandle reports whether h is a directive handle <surface>/v<n>
// (a lowercase slash-separated surface, then a version from 1).
func ValidHandle(h string) bool { return handlePattern.MatchString(h) }

// Registry maps directive handles to their text: edge directives are
// data, versioned and reviewable, never prose built into code. A
// Registry is immutable once built.
type Registry struct {
	text map[string]string
}

// NewRegistry builds a registry from handle → text; every handle must be
// ValidHandle and every text more than white space (a *ValidationError
// names the first entry that is not, in handle order). It holds only
// entries: BuiltinRegistry().With(entries) adds them to the built-in
// directives.
func NewRegistry(entries map[string]string) (*Registry, error) {
	r := &Registry{text: make(map[string]string, len(entries))}
	for _, h := range slices.Sorted(maps.Keys(entries)) {
		t := entries[h]
		if reason := checkDirective(h, t); reason != "" {
			return nil, &ValidationError{Path: "registry[" + strconv.Quote(h) + "]", Reason: reason}
		}
		r.text[h] = t
	}
	return r, nil
}

// checkDirective says why handle h with text t is no directive, or "".
// A directive without text is refused as the reference's registry
// refuses it: its edge would ledger a directive while nothing crossed
// (the silent-substitution failure the ledger exists to expose).
func checkDirective(h, t string) string {
	switch {
	case !ValidHandle(h):
		return "a directive handle is <surface>/v<n>"
	case strings.TrimSpace(t) == "":
		return "the directive has no text; a directive is the text its edge delivers"
	}
	return ""
}

// registry is the directive registry o's edges resolve in: o.Registry,
// or BuiltinRegistry when it is nil (spec runtime §3.7: the directive
// registry defaults to the seeded one).
func (o Options) registry() *Registry {
	if o.Registry == nil {
		return BuiltinRegistry()
	}
	return o.Registry
}

// Resolve returns the text of handle h.
func (r *Registry) Resolve(h string) (string, bool) {
	if r == nil {
		return "", false
	}
	t, ok := r.text[h]
	return t, ok
}

// ValidationError refuses a graph before anything is spent: Path names
// the offending part (nodes[1].profile.name, edges[0].to, …), and
// Pointer gives it as a JSON pointer into the graph document.
type ValidationError struct {
	Path   string
	Reason string
}

func (e *ValidationError) Error() string {
	if p := e.Pointer(); p != "" {
		return "graph: invalid " + e.Path + " (at " + p + "): " + e.Reason
	}
	return "graph: invalid " + e.Path + ": " + e.Reason
}

// Pointer is Path as a JSON pointer (RFC 6901): "/edges/0/to" for
// edges[0].to, "/registry/Delegate" for registry["Delegate"], and ""
// for the whole document (Path "graph").
func (e *ValidationError) Pointer() string {
	path := e.Path
	if path == "graph" {
		return ""
	}
	esc := strings.NewReplacer("~", "~0", "/", "~1")
	var b strings.Builder
	for i := 0; i < len(path); {
		switch path[i] {
		case '.':
			i++
			continue
		case '[':
			if q, err := strconv.QuotedPrefix(path[i+1:]); err == nil {
				tok, _ := strconv.Unquote(q)
				b.WriteString("/" + esc.Replace(tok))
				i += 1 + len(q) + 1 // [ "…" ]
				continue
			}
			j := strings.IndexByte(path[i:], ']')
			if j < 0 {
				j = len(path) - i
			}
			b.WriteString("/" + esc.Replace(path[i+1:i+j]))
			i += j + 1
			continue
		}
		j := i + 1
		for j < len(path) && path[j] != '.' && path[j] != '[' {
			j++
		}
		b.WriteString("/" + esc.Replace(path[i:j]))
		i = j
	}
	return b.String()
}

// ConfigError refuses an option: Field names it (Supervise.Profiles,
// Brain, …).
type ConfigError struct {
	Field  string
	Reason string
}

func (e *ConfigError) Error() string { return "graph: option " + e.Field + ": " + e.Reason }

// Outcome is what one traversal delivered.
type Outcome string

// Traversal outcomes.
const (
	// OutcomeDelivered: the directive and payload crossed the edge.
	OutcomeDelivered Outcome = "delivered"
	// OutcomeStripped: AuthorizeMessage narrowed the instruction; Bytes
	// counts what crossed, Reason what was composed.
	OutcomeStripped Outcome = "stripped"
	// OutcomeEmpty: nothing crossed (no directive text and no payload,
	// or an analyst with no findings).
	OutcomeEmpty Outcome = "empty"
	// OutcomeUnpropagated: the traversal did not reach a worker (a cap,
	// a refused spawn, no live recipient); Reason says why.
	OutcomeUnpropagated Outcome = "unpropagated"
)

// LedgerRow is one edge traversal, in occurrence order. WorkerID is the
// destination worker for delegates, steer and routed rows, and the
// SOURCE worker for findings delivered to the root. Traversal is 1-based
// per edge.
type LedgerRow struct {
	Edge       string           `json:"edge"`
	Kind       EdgeKind         `json:"kind"`
	From       string           `json:"from"`
	To         string           `json:"to"`
	Directive  string           `json:"directive"`
	Traversal  int              `json:"traversal"`
	Outcome    Outcome          `json:"outcome"`
	Continuity string           `json:"continuity"`
	Bytes      int              `json:"bytes"`
	Reason     string           `json:"reason,omitzero"`
	WorkerID   supervise.NodeID `json:"workerId,omitzero"`
}

// GraphResult is a graph run: the supervised result, every traversal in
// occurrence order, the ids of edges whose cap was reached (analyzes
// caps included), and the run id.
type GraphResult struct {
	Result         supervise.SupervisedResult
	Ledger         []LedgerRow
	ExhaustedEdges []string
	RunID          string
}

// GraphEdgeCapError: a delegates edge spent its traversal cap and the
// run produced no winner for any other reason than a lifecycle ending
// (cancelled, aborted, budget-exhausted) — the cap, not the task, ended
// it. It carries the whole evidence.
type GraphEdgeCapError struct {
	ExhaustedEdges []string
	Ledger         []LedgerRow
	Result         supervise.SupervisedResult
}

func (e *GraphEdgeCapError) Error() string {
	return "graph: traversal cap exhausted on " + strings.Join(e.ExhaustedEdges, ", ") +
		" and the run delivered no winner; raise maxTraversals on the edge or fix the cycle"
}
