package graph

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/supervise"
)

// plan is a validated graph, indexed the way the run reads it.
type plan struct {
	root      Node
	rootIndex int
	// workers are the delegates targets by id, with their one edge.
	workers     map[string]Node
	delegatesTo map[string]Edge
	// analysts are the analyst nodes by id, with their one edge.
	analysts  map[string]Node
	analyzeBy map[string]Edge
	analyzes  []Edge
	// analyzesOver are the analyzes edges over each node, in edge
	// order: what one settle of the node fires, found without a scan of
	// every edge.
	analyzesOver map[string][]Edge
	// lenses are the analyzes edges' analysts that are registry lenses.
	lenses map[string]bool
	order  []string // worker ids in node order
}

func invalid(path, format string, args ...any) error {
	return &ValidationError{Path: path, Reason: fmt.Sprintf(format, args...)}
}

func nodePath(i int) string { return "nodes[" + strconv.Itoa(i) + "]" }
func edgePath(i int) string { return "edges[" + strconv.Itoa(i) + "]" }

// Validate checks g and o exactly as RunGraph does before anything is
// spent (spec runtime §3.7 "Validation before spend"), and returns the
// first refusal: a *ConfigError for an option, a *ValidationError naming
// the path for the graph.
func Validate(g Graph, o Options) error {
	_, err := validate(g, o)
	return err
}

func validate(g Graph, o Options) (*plan, error) {
	o.Registry = o.registry()
	if err := checkOptions(o); err != nil {
		return nil, err
	}
	switch {
	case len(g.Nodes) == 0:
		return nil, invalid("nodes", "a graph needs at least one node")
	case len(g.Edges) == 0:
		return nil, invalid("edges", "a graph needs at least one edge")
	case g.Deliverable.Check == nil:
		return nil, invalid("deliverable.check", "the deliverable (termination oracle) is mandatory")
	case g.Budget == nil:
		return nil, invalid("budget", "the budget (one conserved pool) is mandatory")
	case g.Budget.Tokens == nil || g.Budget.Iterations == nil:
		return nil, invalid("budget", "the pool needs token and iteration ceilings")
	}
	byID := map[string]int{}
	for i, n := range g.Nodes {
		p := nodePath(i)
		if n.ID == "" {
			return nil, invalid(p+".id", "a node needs a non-empty id")
		}
		if j, dup := byID[n.ID]; dup {
			return nil, invalid(p+".id", "duplicate node id %q (also %s)", n.ID, nodePath(j))
		}
		if n.Profile == nil {
			return nil, invalid(p+".profile", "a node is described by its profile, which is missing")
		}
		if err := checkProfile(n.Profile); err != nil {
			return nil, invalid(p+".profile", "not a valid profile: %v", err)
		}
		if n.Profile.Name == nil || *n.Profile.Name != n.ID {
			name := "absent"
			if n.Profile.Name != nil {
				name = strconv.Quote(*n.Profile.Name)
			}
			return nil, invalid(p+".profile.name", "is %s; profile.name is the node identity and must equal the id %q", name, n.ID)
		}
		byID[n.ID] = i
	}
	known := func(path, id string) error {
		if _, ok := byID[id]; !ok {
			return invalid(path, "names unknown node %q", id)
		}
		return nil
	}

	pl := &plan{workers: map[string]Node{}, delegatesTo: map[string]Edge{}, analysts: map[string]Node{}, analyzeBy: map[string]Edge{}, lenses: map[string]bool{},
		analyzesOver: map[string][]Edge{}}
	lensIDs := map[string]bool{}
	for _, l := range supervise.BuiltinLenses() {
		lensIDs[l.ID] = true
	}
	for i, l := range o.Supervise.Analysts {
		// As supervise's lens menu refuses them, so that Validate and
		// RunGraph agree and the refusal names the lens.
		field := "Supervise.Analysts[" + strconv.Itoa(i) + "]"
		if err := supervise.ValidateLens(l); err != nil {
			return nil, &ConfigError{Field: field, Reason: err.Error()}
		}
		if lensIDs[l.ID] {
			return nil, &ConfigError{Field: field, Reason: fmt.Sprintf("lens %q is already on the menu (a built-in lens or an earlier one)", l.ID)}
		}
		lensIDs[l.ID] = true
	}
	var delegates []int
	for i, e := range g.Edges {
		p := edgePath(i)
		if e.Kind != Delegates && e.Kind != Analyzes {
			return nil, invalid(p+".kind", "is %q; an edge is delegates or analyzes", e.Kind)
		}
		if !ValidHandle(e.Directive) {
			return nil, invalid(p+".directive", "%q is not a directive handle <surface>/v<n>", e.Directive)
		}
		if _, ok := o.Registry.Resolve(e.Directive); !ok {
			return nil, invalid(p+".directive", "%q does not resolve in the directive registry", e.Directive)
		}
		// A delegates cap refuses spawns, so 0 would leave its node
		// unreachable; an analyzes cap only ledgers (over-cap findings
		// are unpropagated, never refused), so 0 is a valid cap there.
		if e.MaxTraversals != nil && e.Kind == Delegates && *e.MaxTraversals < 1 {
			return nil, invalid(p+".maxTraversals", "is %d; a delegates cap is at least 1", *e.MaxTraversals)
		}
		if e.MaxTraversals != nil && *e.MaxTraversals < 0 {
			return nil, invalid(p+".maxTraversals", "is %d; a cap is not negative", *e.MaxTraversals)
		}
		if e.Kind == Analyzes {
			if e.Continuity != "" {
				return nil, invalid(p+".continuity", "an analyzes edge carries no continuity (every analyst run is fresh)")
			}
			if e.From != "" {
				return nil, invalid(p+".from", "an analyzes edge has analyst and over, not from")
			}
			continue
		}
		if e.Analyst != "" || len(e.Over) > 0 {
			return nil, invalid(p, "a delegates edge has from and to, not analyst or over")
		}
		if err := known(p+".from", e.From); err != nil {
			return nil, err
		}
		if err := known(p+".to", e.To); err != nil {
			return nil, err
		}
		if e.From == e.To {
			return nil, invalid(p+".to", "%s delegates to itself; the driver-worker cycle is the settle-return loop, not a self-edge", e.ID())
		}
		switch e.Continuity {
		case "", ContinuityFresh, ContinuityResume:
		default:
			return nil, invalid(p+".continuity", "is %q; a delegates edge's continuity is fresh or resume", e.Continuity)
		}
		delegates = append(delegates, i)
	}
	if len(delegates) == 0 {
		return nil, invalid("edges", "at least one delegates edge is required (who spawns whom)")
	}

	delegatedTo := map[string]bool{}
	for _, i := range delegates {
		delegatedTo[g.Edges[i].To] = true
	}
	var roots []string
	isRoot := map[string]bool{}
	for _, i := range delegates {
		if f := g.Edges[i].From; !delegatedTo[f] && !isRoot[f] {
			isRoot[f] = true
			roots = append(roots, f)
		}
	}
	switch len(roots) {
	case 1:
	case 0:
		return nil, invalid("edges", "no root: the delegates edges form a cycle with no entry (a root delegates and is never delegated to)")
	default:
		return nil, invalid("edges", "%d roots (%s); a graph has exactly one node that delegates and is never delegated to", len(roots), strings.Join(roots, ", "))
	}
	pl.rootIndex = byID[roots[0]]
	pl.root = g.Nodes[pl.rootIndex]
	if !pl.root.Profile.Tools[SpawnTool] {
		return nil, invalid(nodePath(pl.rootIndex)+".profile.tools", "the root %q does not declare %s; it could spawn no worker", pl.root.ID, SpawnTool)
	}
	for _, i := range delegates {
		e := g.Edges[i]
		if e.From != pl.root.ID {
			return nil, invalid(edgePath(i)+".from", "%s delegates from %q, not the root %q; only the star (one driver over its workers) runs today", e.ID(), e.From, pl.root.ID)
		}
		if prior, dup := pl.delegatesTo[e.To]; dup {
			return nil, invalid(edgePath(i)+".to", "%q is already the target of %s; one delegation directive per worker node (version the directive instead)", e.To, prior.ID())
		}
		pl.delegatesTo[e.To] = e
		pl.workers[e.To] = g.Nodes[byID[e.To]]
	}
	// The star: only the root manages. A node whose profile declares
	// coordination verbs would be a nested manager (supervise), spawning
	// outside the graph's edges, caps and ledger.
	for i, n := range g.Nodes {
		if i != pl.rootIndex && supervise.IsManagerProfile(n.Profile) {
			return nil, invalid(nodePath(i)+".profile.tools", "%q declares coordination verbs; only the root %q manages (the star: a node that managed would spawn outside the graph's edges)", n.ID, pl.root.ID)
		}
	}

	analyzesAt := map[string]int{} // analyzes edge id → index
	for i, e := range g.Edges {
		if e.Kind != Analyzes {
			continue
		}
		p := edgePath(i)
		if e.Analyst == "" {
			return nil, invalid(p+".analyst", "an analyzes edge names its analyst")
		}
		if prior, dup := pl.analyzeBy[e.Analyst]; dup {
			return nil, invalid(p+".analyst", "analyst %q already has %s; one analyzes edge per analyst", e.Analyst, prior.ID())
		}
		idx, isNode := byID[e.Analyst]
		isLens := lensIDs[e.Analyst]
		switch {
		case isNode && isLens:
			return nil, invalid(p+".analyst", "%q is both a graph node and an analyst lens; the id alone tells the two apart, so it is ambiguous", e.Analyst)
		case isLens:
		case !isNode:
			return nil, invalid(p+".analyst", "%q is neither a graph node nor a known lens", e.Analyst)
		case e.Analyst == pl.root.ID:
			return nil, invalid(p+".analyst", "the root %q drives; give the analyst its own node", e.Analyst)
		case delegatedTo[e.Analyst]:
			return nil, invalid(p+".analyst", "node %q is a delegates target; an analyst is environment and never receives work", e.Analyst)
		}
		if len(e.Over) == 0 {
			return nil, invalid(p+".over", "an analyzes edge is over at least one node")
		}
		overAt := make(map[string]int, len(e.Over))
		for j, over := range e.Over {
			op := p + ".over[" + strconv.Itoa(j) + "]"
			if err := known(op, over); err != nil {
				return nil, err
			}
			if over == pl.root.ID {
				return nil, invalid(op, "the root never settles as a worker; this edge would never fire")
			}
			if k, dup := overAt[over]; dup {
				return nil, invalid(op, "%q is over[%d] already; a node is analyzed once per settle", over, k)
			}
			overAt[over] = j
		}
		if err := known(p+".to", e.To); err != nil {
			return nil, err
		}
		// The id keys the edge's ledger rows, cap and journal records;
		// ids with ':', '+' or '->' in them can spell another edge's.
		if j, dup := analyzesAt[e.ID()]; dup {
			return nil, invalid(p, "its id %s is also %s's; rename a node so the two edges can be told apart", e.ID(), edgePath(j))
		}
		analyzesAt[e.ID()] = i
		pl.analyzeBy[e.Analyst] = e
		if isLens {
			pl.lenses[e.Analyst] = true
		} else {
			pl.analysts[e.Analyst] = g.Nodes[idx]
		}
		pl.analyzes = append(pl.analyzes, e)
		for _, over := range e.Over { // each once: a repeat was refused above
			pl.analyzesOver[over] = append(pl.analyzesOver[over], e)
		}
	}
	for i, e := range g.Edges {
		if e.Kind != Analyzes {
			continue
		}
		for j, over := range e.Over {
			if _, ok := pl.analysts[over]; ok {
				return nil, invalid(edgePath(i)+".over["+strconv.Itoa(j)+"]", "%q is an analyst node; its settle is a finding, never a worker's, so this edge would never fire", over)
			}
		}
		if _, ok := pl.analysts[e.To]; ok {
			return nil, invalid(edgePath(i)+".to", "%q is an analyst node; an analyst is environment and never receives work, so these findings would never be delivered", e.To)
		}
	}
	for i, n := range g.Nodes {
		_, w := pl.workers[n.ID]
		_, a := pl.analysts[n.ID]
		if n.ID != pl.root.ID && !w && !a {
			return nil, invalid(nodePath(i), "node %q is reached by no edge and would never run", n.ID)
		}
		if w {
			pl.order = append(pl.order, n.ID)
		}
	}
	if err := checkRoot(pl, o); err != nil {
		return nil, err
	}
	return pl, nil
}

// checkProfile validates a profile built in Go the way a parsed one is.
func checkProfile(p *profile.Profile) error {
	v, err := canonjson.ToValue(p)
	if err != nil {
		return err
	}
	_, err = profile.FromValue(v)
	return err
}

// checkRoot refuses a root the chosen brain cannot drive.
func checkRoot(pl *plan, o Options) error {
	h := pl.root.Profile.Harness
	external := h != "" && h != harness.CLIBase
	tools := nodePath(pl.rootIndex) + ".profile.tools"
	switch {
	case o.Brain != nil && external:
		return &ConfigError{Field: "Brain", Reason: fmt.Sprintf("the root %q declares harness %s, which drives it; a caller brain applies only to a cli-base root", pl.root.ID, h)}
	case o.Brain != nil:
		return nil
	case external:
		return &ConfigError{Field: "Brain", Reason: fmt.Sprintf("the root %q declares harness %s, whose brain is not built in", pl.root.ID, h)}
	case o.Supervise.Router == nil:
		return &ConfigError{Field: "Supervise.Router", Reason: "a cli-base root needs its chat model (or pass Brain)"}
	}
	for name, on := range pl.root.Profile.Tools {
		v, ok := strings.CutPrefix(name, supervise.ToolPrefix)
		if on && (!ok || !slices.Contains(supervise.Verbs(), v)) {
			return invalid(tools, "the root declares %q, which its router brain does not serve (only coordination verbs)", name)
		}
	}
	return nil
}

// Option classes: what RunGraph does with each supervise.Options field.
const (
	// owned: the graph derives the value from the Graph; a caller value
	// is refused by name rather than silently overwritten.
	classOwned = "owned"
	// transformed: the graph's own router brain reads it.
	classTransformed = "transformed"
	// forwarded: passed to supervise.Supervise verbatim.
	classForwarded = "forwarded"
)

// superviseOptionClass classifies every supervise.Options field; a test
// fails when supervise gains a field this table does not classify, so a
// new supervise option cannot go missing from graph runs unnoticed.
var superviseOptionClass = map[string]string{
	"Budget": classOwned, "Deliverable": classOwned, "Profiles": classOwned, "Brain": classOwned,
	"Resume": classForwarded, "Analysts": classForwarded, "AfterSettle": classOwned,
	"Router": classTransformed, "MaxTurns": classTransformed, "Now": classTransformed, "Logger": classTransformed,
	"Deadline": classForwarded, "PerWorker": classForwarded, "MaxLiveWorkers": classForwarded, "MaxDepth": classForwarded,
	"AllowedModels": classForwarded, "AuthorizeSpawn": classForwarded, "Executor": classForwarded, "Workers": classForwarded,
	"BudgetExempt": classForwarded, "RunDir": classForwarded, "RunID": classForwarded, "SettleGrace": classForwarded,
	"Observer": classForwarded, "SpawnStore": classForwarded, "Store": classForwarded,
	"SpawnLeaseTTL": classForwarded, "WorkspaceRoot": classTransformed, "OnResume": classOwned,
	"AnalystModel": classForwarded, "AuthoredProfiles": classOwned, "ReturnEnded": classForwarded,
	"RecoverTimeout": classForwarded, "ManagerBrain": classForwarded, "Held": classForwarded,
	"MaxRestarts": classForwarded, "RestartsWithin": classForwarded, "Root": classForwarded,
	"DriverRetry": classForwarded, "Reprompt": classOwned, "OnDriverAttempt": classForwarded,
	"ChildSettleGrace": classForwarded, "StopRule": classForwarded, "OnProgressStop": classForwarded,
	// The reference's runGraph forwards extraTools (and their
	// executeExtraTool, here each tool's Run): the graph's root router
	// brain is offered them beside the graph's verbs, and a caller's
	// Brain gets them from Driver.ExtraTools.
	"ExtraTools":       classForwarded,
	"AuthorizeMessage": classOwned, "Finalizer": classForwarded, "FinalizerTimeout": classForwarded,
	"EscalateQuestion": classForwarded, "WatchWorkers": classForwarded,
	// The reference's runGraph forwards resolveSupervisorTools: the
	// graph's root (its router brain's DriveTools, or Driver.NodeTools
	// for a caller's Brain) and every nested manager get their own.
	"ResolveSupervisorTools": classForwarded,
	// A graph's delegates edges carry their continuity (the reference's
	// runGraph derives continuityByProfile from them: GRAPH_OWNED).
	"StallAfter": classForwarded, "ContinuityByProfile": classOwned,
	// Passed to the supervise run as given (run.go copies o.Supervise):
	// every node's worker is retried alike.
	"WorkerRetry": classForwarded, "OnWorkerRetry": classForwarded,
	// Peer mail is between a manager's workers; a graph's nodes are the
	// root's workers, so they mail each other as any siblings do.
	"PeerMail": classForwarded,
}

// checkOptions refuses a supervise option the graph owns: a caller value
// would be overwritten and the capability it asks for silently absent.
func checkOptions(o Options) error {
	s := o.Supervise
	owned := func(field, why string) error {
		return &ConfigError{Field: "Supervise." + field, Reason: "owned by the graph: " + why}
	}
	switch {
	case s.Budget.Tokens != nil || s.Budget.Iterations != nil || s.Budget.MicroUSD != nil || s.Budget.Resources != nil:
		return owned("Budget", "set Graph.Budget, the one conserved pool")
	case s.Deliverable.Check != nil || s.Deliverable.Describe != "":
		return owned("Deliverable", "set Graph.Deliverable")
	case s.Profiles != nil:
		return owned("Profiles", "the nodes' profiles are the only ones a graph spawns")
	case s.AuthoredProfiles:
		return owned("AuthoredProfiles", "a graph spawns its nodes' pinned profiles, never an authored one")
	case s.Brain != nil:
		return owned("Brain", "pass Options.Brain, which drives the graph's Driver")
	case s.AfterSettle != nil:
		return owned("AfterSettle", "the graph runs its analyzes edges' lenses from it")
	case s.AuthorizeMessage != nil:
		return owned("AuthorizeMessage", "pass Options.AuthorizeMessage, which the graph gives supervise wrapped so a narrowed steer is ledgered stripped")
	case s.OnResume != nil:
		return owned("OnResume", "the graph restores its edge ledger from it")
	case s.ContinuityByProfile != nil:
		return owned("ContinuityByProfile", "a delegates edge's continuity is its target's default (Edge.Continuity)")
	case s.Reprompt.Max != 0 || s.Reprompt.UntilComplete || s.Reprompt.MaxBarren != 0 || s.Reprompt.OnUnmet != nil:
		return owned("Reprompt", "a graph's root runs in process (its router brain, or Options.Brain), with no external driver to re-prompt")
	case s.Resume && s.RunDir == "" && s.WorkspaceRoot != "" && s.RunID == "":
		return &ConfigError{Field: "Supervise.RunID", Reason: "resuming in a WorkspaceRoot needs the RunID that names the run's directory"}
	case o.Brain != nil && s.Router != nil:
		return &ConfigError{Field: "Brain", Reason: "Brain and Supervise.Router are mutually exclusive: both would make the root's calls"}
	}
	return nil
}
