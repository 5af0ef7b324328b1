package supervise

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
)

// Continuity says whether a spawn starts a fresh worker or re-attaches to
// the session of its label's latest settled worker (§3.6 "Continuity").
type Continuity string

// Continuity modes; the zero value is fresh.
const (
	ContinuityFresh  Continuity = ""
	ContinuityResume Continuity = "resume"
	// continuityFreshWord is how spawn_worker's schema (and a graph
	// edge) spells the default; Spawn reads it as ContinuityFresh.
	continuityFreshWord Continuity = "fresh"
)

// Resumed says how a keyed spawn related to an earlier spawn of its key.
type Resumed string

// Resumed values (§3.6 "Keyed spawns").
const (
	// ResumedNone: the key was new (or the spawn was not keyed).
	ResumedNone Resumed = ""
	// ResumedCompleted: the key's earlier spawn is done; the reply
	// returns its settlement and nothing runs or spends.
	ResumedCompleted Resumed = "completed"
	// ResumedRetried: the key's earlier spawn went down; a fresh node
	// was admitted and PriorWorker names the earlier one.
	ResumedRetried Resumed = "retried"
)

// DefaultRootID is the root's id when ScopeOptions.RootID is empty.
const DefaultRootID NodeID = "root"

// ScopeOptions configures a Scope. The zero value admits any number of
// workers at any depth, each reserving only what its request asks.
type ScopeOptions struct {
	// RootID is the root node's id (a run id); DefaultRootID when empty.
	RootID NodeID
	// PerWorker is the default reservation; a request's budget overrides
	// it field by field (and resource by resource).
	PerWorker ledger.Budget
	// MaxLiveWorkers caps the live nodes of the whole tree; 0 is no cap.
	// It is checked before any reservation.
	MaxLiveWorkers int
	// MaxDepth caps a node's depth (the root's children are depth 1);
	// 0 is no cap.
	MaxDepth int
	// AllowedModels, when not empty, is the only models a request may
	// name (an empty request model defers to the profile and passes).
	AllowedModels []string
	// AuthorizeSpawn, when set, may refuse a request by returning an
	// error (preflight-refused, cause "not-authorized"). It runs after
	// fences 1–6 of Spawn, without the scope's lock (settlements go on
	// while it decides; the fences are checked again after it), and is
	// not asked again for a spawn a resumed run replays. A hook that
	// panics, or does not answer within DefaultAuthorizeSpawnTimeout (or
	// before the context SpawnContext was given ends), refuses (its
	// detail says which).
	AuthorizeSpawn func(SpawnRequest) error
	// Preflight, when set, may refuse a request by returning an error
	// (preflight-refused, cause "preflight"), after AuthorizeSpawn. It
	// runs with the scope locked: it must answer at once and must not
	// call back into the scope.
	Preflight func(SpawnRequest) error
	// Now replaces time.Now for the deadline of a nested manager's
	// carved pool (carve.go), which is the run pool's.
	Now func() time.Time
}

// SpawnRequest asks for one worker.
type SpawnRequest struct {
	// Parent is the spawning node; empty means the root.
	Parent NodeID
	// Label names the worker among its siblings (continuity resumes by
	// it; the profile name stands in when it is empty).
	Label   string
	Profile string
	// ProfileDigest is an authored profile's identity (empty for a
	// registered one); Authored is that profile, for AuthorizeSpawn.
	ProfileDigest string
	Authored      *profile.Profile
	Model         string
	Task          string
	// Key, when set, makes the spawn idempotent: the same key with the
	// same request replays, with a different request conflicts. A key
	// belongs to the manager that spawns (Parent, the root when empty):
	// the same key under two managers names two assignments (§3.6; the
	// reference's nested scopes each keep their own key registry).
	Key        string
	Budget     ledger.Budget
	Continuity Continuity
}

// SpawnReply is an admitted (or replayed) spawn.
type SpawnReply struct {
	Node NodeID
	Seq  int
	// Assignment is "key:<k>" or "ordinal:<n>", both the spawning
	// manager's: n counts that manager's unkeyed spawns from 0, as the
	// reference's assignment ids do.
	Assignment string
	// Reserved is the merged ceiling reserved for the node.
	Reserved ledger.Budget
	Resumed  Resumed
	// PriorWorker and PriorReason name the earlier spawn of the key when
	// Resumed is retried.
	PriorWorker NodeID
	PriorReason string
	// ResumeOf is the settled worker a continuity-resume spawn
	// re-attaches to.
	ResumeOf NodeID
	// Settlement is the earlier settlement when Resumed is completed.
	Settlement *Settlement
	// Live counts live nodes after the spawn; FreeSlots is nil when
	// MaxLiveWorkers is not set.
	Live      int
	FreeSlots *int
}

// Result is how a node ended: a terminal state and what it spent. A nil
// spend quantity is unknown and is charged at the node's ceiling.
type Result struct {
	State  State
	Spent  ledger.Spend
	Reason string
}

// Settlement is a node's recorded end. Order counts settlements in the
// order they were recorded.
type Settlement struct {
	Node   NodeID
	Seq    int
	Order  int
	State  State
	Spent  ledger.Spend
	Reason string
	// BudgetViolation names the channels on which the node's measured
	// spend exceeded its reservation, nil when none did (spec §3.6
	// Settled budgetViolation). It is an accounting fact, never an
	// outcome change: the spend is charged in full, the state stands.
	BudgetViolation *BudgetViolation
}

// BudgetViolation is a settled node's overspend (spec §3.6
// budgetViolation{overspent[…]}), in channel order: tokens,
// iterations, usd, then resource:<name> by name.
type BudgetViolation struct {
	Overspent []Overspend `json:"overspent"`
}

// Overspend is one channel a node spent past its reservation: Channel
// is a ledger channel (ledger.ChannelTokens, ledger.ChannelIterations,
// ledger.ChannelUSD, or "resource:<name>"); Reserved and Spent are in
// its unit (micro-dollars for usd).
type Overspend struct {
	Channel  string `json:"channel"`
	Reserved int64  `json:"reserved"`
	Spent    int64  `json:"spent"`
}

// budgetViolation is spent's overspend of reserved: the channels both
// name whose measured spend (for tokens, or the floor of an incomplete
// receipt) exceeds the reservation; nil when none. Unmeasured channels
// are charged at their ceiling, never an overspend.
func budgetViolation(reserved ledger.Budget, spent ledger.Spend) *BudgetViolation {
	var over []Overspend
	check := func(ch string, r, v *int64) {
		if r != nil && v != nil && *v > *r {
			over = append(over, Overspend{Channel: ch, Reserved: *r, Spent: *v})
		}
	}
	tokens := spent.Tokens
	if tokens == nil && spent.TokensFloor != nil && *spent.TokensFloor <= ledger.MaxQuantity {
		// An incomplete receipt above the reservation is an overspend
		// measured at least that far.
		tokens = spent.TokensFloor
	}
	check(ledger.ChannelTokens, reserved.Tokens, tokens)
	check(ledger.ChannelIterations, reserved.Iterations, spent.Iterations)
	check(ledger.ChannelUSD, reserved.MicroUSD, spent.MicroUSD)
	if resourceOverspent(reserved.Resources, spent.Resources) {
		// Sorted (an allocation) only when one is over: settling stays
		// allocation-free here for the common case.
		for _, name := range slices.Sorted(maps.Keys(reserved.Resources)) {
			r := reserved.Resources[name]
			check("resource:"+name, &r, spent.Resources[name])
		}
	}
	if over == nil {
		return nil
	}
	return &BudgetViolation{Overspent: over}
}

// resourceOverspent reports whether a measured spend of a named
// resource exceeds its reservation.
func resourceOverspent(reserved map[string]int64, spent map[string]*int64) bool {
	for name, r := range reserved {
		if v := spent[name]; v != nil && *v > r {
			return true
		}
	}
	return false
}

// NodeInfo is a read-only view of one node.
type NodeInfo struct {
	ID, Parent                 NodeID
	Seq, Depth                 int
	Label, Profile, Model, Key string
	State                      State
	Reserved                   ledger.Budget
	ResumeOf                   NodeID
	// Runtime names where the node's worker runs (RuntimeOf its
	// executor), "" when unknown. The scope does not keep it: the
	// coordinator sets it on what it gives an Observer.
	Runtime string
	// InDoubt: the node's outcome is unknown; it is charged at its
	// ceiling and its key refuses in-doubt.
	InDoubt bool
	// NeverSettled: the scope closed while the node was live; it is
	// charged at its ceiling.
	NeverSettled bool
	Settlement   *Settlement
}

type node struct {
	NodeInfo
	ticket *ledger.Ticket
	canon  string
	// slotHeld: the node settled but its teardown was never
	// acknowledged; it still counts as live (HoldSlot).
	slotHeld bool
	// carve is the pool its children reserve from, once it has one
	// (carve.go).
	carve *carved
	// assignment is its assignment under the manager that spawned it
	// (SpawnReply.Assignment).
	assignment string
	// prior is the node its key named before it (a retried keyed
	// spawn's down prior), nil for none: forget gives the key back.
	prior *node
}

func (n *node) live() bool { return n.State.Live() && !n.InDoubt && !n.NeverSettled }

// managerKey is a spawn key under the manager that spawns with it (the
// spawn's parent): one assignment of that manager's key registry.
type managerKey struct {
	manager NodeID
	key     string
}

// labelKey is a label under a parent: what a continuity-resume spawn
// re-attaches to.
type labelKey struct {
	parent NodeID
	label  string
}

// labelled is the scope's nodes of one labelKey, in admission order,
// with how many are live and the latest admitted of those settled: a
// resume spawn's checks, without a scan of the whole tree.
type labelled struct {
	nodes   []*node
	live    int
	settled *node
}

// Scope is the conserved budget scope of one supervised tree. It is safe
// for concurrent use.
type Scope struct {
	mu    sync.Mutex
	pool  *ledger.Pool
	opts  ScopeOptions
	root  NodeID
	nodes map[NodeID]*node
	order []*node
	// keys is each manager's key registry: a key names an assignment
	// of the manager that spawns under it (the root or a nested
	// manager), so the same key under two managers is two assignments
	// (the reference mounts each nested scope with a registry of its
	// own). ordinals numbers each manager's unkeyed assignments.
	keys     map[managerKey]*node
	labels   map[labelKey]*labelled
	seq      int
	ordinals map[NodeID]int
	settled  int
	live     int
	aborted  bool
	closed   bool
	allowed  map[string]bool
	// replaying is set while a resumed run replays its journal: its
	// spawns are re-admitted (ledger.Pool.Readmit), not admitted anew,
	// so a run resumed past its deadline replays what was admitted
	// before it.
	replaying bool
	// authorizeTimeout bounds one AuthorizeSpawn call (0:
	// DefaultAuthorizeSpawnTimeout).
	authorizeTimeout time.Duration
}

// skipTo makes seq the next sequence number a replayed spawn gets when
// the journal's next spawn record skips numbers: each one a spawn whose
// record the journal refused after a later spawn was admitted
// (Scope.forget gives a number back only when it was the newest). It
// never goes back.
func (s *Scope) skipTo(seq int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.replaying && seq-1 > s.seq {
		s.seq = seq - 1
	}
}

// setReplaying marks the journal's replay begun or done.
func (s *Scope) setReplaying(on bool) {
	s.mu.Lock()
	s.replaying = on
	s.mu.Unlock()
}

// ErrInvalidOptions: New or Supervise was given options it cannot run
// (a nil pool, a negative cap, a missing requirement); nothing ran and
// nothing was journaled.
var ErrInvalidOptions = errors.New("supervise: invalid options")

// New returns a scope drawing from pool.
func New(pool *ledger.Pool, opts ScopeOptions) (*Scope, error) {
	if pool == nil {
		return nil, fmt.Errorf("%w: nil pool", ErrInvalidOptions)
	}
	if opts.MaxLiveWorkers < 0 || opts.MaxDepth < 0 {
		return nil, fmt.Errorf("%w: negative MaxLiveWorkers or MaxDepth", ErrInvalidOptions)
	}
	root := opts.RootID
	if root == "" {
		root = DefaultRootID
	}
	if !validName(string(root)) {
		return nil, fmt.Errorf("%w: root id %q", ErrInvalidOptions, root)
	}
	s := &Scope{pool: pool, opts: opts, root: root, nodes: map[NodeID]*node{}, keys: map[managerKey]*node{}, ordinals: map[NodeID]int{}}
	if len(opts.AllowedModels) > 0 {
		s.allowed = map[string]bool{}
		for _, m := range opts.AllowedModels {
			s.allowed[m] = true
		}
	}
	return s, nil
}

// DefaultAuthorizeSpawnTimeout bounds one call of
// ScopeOptions.AuthorizeSpawn (Options.AuthorizeSpawn): a hook that has
// not answered by then refuses the spawn.
const DefaultAuthorizeSpawnTimeout = 10 * time.Second

// authorize asks AuthorizeSpawn h about req through callHook,
// bounded by DefaultAuthorizeSpawnTimeout and by the spawn's ctx: the
// refusal's detail (and the hook's error, when it returned one), or ""
// when h admitted req. A panic, or no answer in time, refuses: a hook is
// the product's, and neither its panic nor its hang may become the run's
// (no lock is held while it runs; a run cancelled, stopped or out of time
// does not wait out the hook; a hook that never answers is left to
// return into a buffer nobody reads).
func (s *Scope) authorize(ctx context.Context, h func(SpawnRequest) error, req SpawnRequest) (string, error) {
	d := s.authorizeTimeout
	if d <= 0 {
		d = DefaultAuthorizeSpawnTimeout
	}
	hctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	a, answered := callHook(hctx, func(context.Context) (struct{}, error) { return struct{}{}, h(req) })
	switch {
	case !answered && ctx.Err() != nil:
		return fmt.Sprintf("the spawn ended before the authorization hook answered: %v", context.Cause(ctx)), ctx.Err()
	case !answered:
		return fmt.Sprintf("the authorization hook did not answer within %s", d), nil
	case a.panic != nil:
		return fmt.Sprintf("the authorization hook panicked: %v", a.panic), nil
	case a.err != nil:
		if a.err.Error() == "" {
			// An empty detail would read as admitted.
			return "the authorization hook refused without a reason", a.err
		}
		return a.err.Error(), a.err
	}
	return "", nil
}

// Root returns the root node's id.
func (s *Scope) Root() NodeID { return s.root }

// Bounds of a spawn request, checked before it takes a node id, so that
// what is admitted always fits one journal record: a spawn's label, key
// and profile name, and its task.
const (
	MaxSpawnName = 512
	MaxSpawnTask = 256 << 10
)

// validName reports whether v is valid UTF-8 without control characters.
func validName(v string) bool {
	if !utf8.ValidString(v) {
		return false
	}
	for _, r := range v {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

func (s *Scope) freeSlotsLocked() *int {
	if s.opts.MaxLiveWorkers == 0 {
		return nil
	}
	f := max(s.opts.MaxLiveWorkers-s.live, 0)
	return &f
}

func (s *Scope) refuse(code Code, cause, detail string, err error) *Refusal {
	return &Refusal{Code: code, Cause: cause, Detail: detail, Live: s.live, FreeSlots: s.freeSlotsLocked(), Err: err}
}

// canonical is the request as compared for idempotency keys.
type canonical struct {
	Parent     NodeID
	Label      string
	Profile    string
	Model      string
	Task       string
	Budget     ledger.Budget
	Continuity Continuity
}

// Spawn admits a worker or refuses it. Fences run in this order, and a
// refusal at any of them changes nothing:
//
//  1. scope state: scope-settled, scope-aborted;
//  2. identity: invalid-identity (no profile, unknown or settled parent,
//     control characters in label or key, a model outside AllowedModels);
//     resume-with-key (a resume under any key, checked before the key);
//  3. the key: in-doubt, key-conflict, duplicate-key, or a replay of a
//     completed key (no new node, no spend);
//  4. max-live-workers (before any reservation);
//  5. depth-exceeded;
//  6. continuity: resume-while-live, resume-no-prior;
//  7. AuthorizeSpawn, then Preflight: preflight-refused;
//  8. the budget, merged over PerWorker and reserved from the pool (a
//     nested manager's carved pool under one), in ledger.Pool.Reserve's
//     order: budget-exhausted (deadline, dollars tainted), preflight-refused
//     (invalid budget), budget-exhausted on tokens then iterations,
//     usd-unbudgeted (more than $0 of a pool without a dollar ceiling),
//     budget-exhausted on dollars then named resources. A budget-exhausted
//     refusal carries its Shortfall, a usd-unbudgeted one its Hint.
//
// An admitted node is pending with id "<parent>:s<seq>".
func (s *Scope) Spawn(req SpawnRequest) (SpawnReply, error) {
	return s.SpawnContext(context.Background(), req)
}

// SpawnContext is Spawn for a spawning manager whose ctx bounds the wait
// for AuthorizeSpawn: a hook still deciding when ctx ends refuses the
// spawn (preflight-refused, not-authorized) at once instead of holding it
// until DefaultAuthorizeSpawnTimeout.
func (s *Scope) SpawnContext(ctx context.Context, req SpawnRequest) (SpawnReply, error) {
	if err := s.authorizeFirst(ctx, req); err != nil {
		return SpawnReply{}, err
	}
	return s.admit(req)
}

// authorizeFirst is SpawnContext's first half, for a caller that admits
// the request later in an order of its own (the Coordinator holds
// spawnMu only for the admission): fences 1–6, then AuthorizeSpawn,
// bounded by ctx. The hook decides without the scope's lock, so
// settlements and the other verbs go on meanwhile (as the reference's
// awaited hook lets them); admit checks the fences again. It returns the
// refusal, or nil for a request that goes on to admit — a key's
// completed result too, which admit answers again without asking the
// hook.
func (s *Scope) authorizeFirst(ctx context.Context, req SpawnRequest) error {
	h := s.opts.AuthorizeSpawn
	if h == nil {
		return nil
	}
	s.mu.Lock()
	a, _, err := s.fencesLocked(&req)
	s.mu.Unlock()
	if !a.admit {
		return err
	}
	if detail, err := s.authorize(ctx, h, req); detail != "" {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.refuse(CodePreflightRefused, "not-authorized", detail, err)
	}
	return nil
}

// admission is what the fences of a spawn request found: whether it may
// go on to the budget, and what the admission needs.
type admission struct {
	admit    bool
	depth    int
	canon    string
	prior    *node
	resumeOf NodeID
}

// fencesLocked checks fences 1–6 of Spawn against req, normalizing it
// (its parent, its continuity's spelling); s.mu is held. Unless the
// admission says admit, the reply and error are Spawn's answer: a
// refusal, or a key's completed result.
func (s *Scope) fencesLocked(req *SpawnRequest) (admission, SpawnReply, error) {
	if s.closed {
		return admission{}, SpawnReply{}, s.refuse(CodeScopeSettled, "", "the driver already returned", nil)
	}
	if s.aborted {
		return admission{}, SpawnReply{}, s.refuse(CodeScopeAborted, "", "this run stopped admitting work (it was aborted); no further worker can start", nil)
	}

	// 2. identity.
	if req.Parent == "" {
		req.Parent = s.root
	}
	depth := 1
	if req.Parent != s.root {
		p, ok := s.nodes[req.Parent]
		if !ok {
			return admission{}, SpawnReply{}, s.refuse(CodeInvalidIdentity, "unknown-parent", "no node "+strconv.Quote(string(req.Parent))+" exists in this run to spawn under", nil)
		}
		if !p.live() {
			return admission{}, SpawnReply{}, s.refuse(CodeInvalidIdentity, "parent-not-live", "node "+string(req.Parent)+" has settled, so it cannot take children", nil)
		}
		depth = p.Depth + 1
	}
	if req.Profile == "" {
		return admission{}, SpawnReply{}, s.refuse(CodeInvalidIdentity, "no-profile", "a spawn must name the profile its worker runs", nil)
	}
	if !validName(req.Label) || !validName(req.Key) || !validName(req.Profile) {
		return admission{}, SpawnReply{}, s.refuse(CodeInvalidIdentity, "control-characters", "label, key and profile must be printable", nil)
	}
	if len(req.Label) > MaxSpawnName || len(req.Key) > MaxSpawnName || len(req.Profile) > MaxSpawnName {
		return admission{}, SpawnReply{}, s.refuse(CodeInvalidIdentity, "too-long", "label, key and profile must be at most "+strconv.Itoa(MaxSpawnName)+" bytes", nil)
	}
	if len(req.Task) > MaxSpawnTask || !utf8.ValidString(req.Task) {
		return admission{}, SpawnReply{}, s.refuse(CodePreflightRefused, "invalid-task",
			"a task must be valid UTF-8 of at most "+strconv.Itoa(MaxSpawnTask)+" bytes; this one has "+strconv.Itoa(len(req.Task)), nil)
	}
	if s.allowed != nil && req.Model != "" && !s.allowed[req.Model] {
		return admission{}, SpawnReply{}, s.refuse(CodeInvalidIdentity, "model-not-allowed", "model "+strconv.Quote(req.Model)+" is not among this run's allowed models", nil)
	}
	if req.Continuity == continuityFreshWord {
		req.Continuity = ContinuityFresh // spawn_worker's schema spells the default
	}
	if req.Continuity != ContinuityFresh && req.Continuity != ContinuityResume {
		return admission{}, SpawnReply{}, s.refuse(CodeInvalidIdentity, "continuity", "continuity "+strconv.Quote(string(req.Continuity))+" is neither fresh nor resume", nil)
	}
	// A resume under a key is refused by the request alone, before the
	// key is looked up: otherwise a key used before would answer
	// key-conflict (its continuity differs) for what is a continuity
	// refusal (§3.6: continuity is resolved before the assignment id).
	if req.Continuity == ContinuityResume && req.Key != "" {
		return admission{}, SpawnReply{}, s.refuse(CodeResumeWithKey, "", "a resume re-attaches to a settled worker; keys name fresh work", nil)
	}

	// 3. the key.
	var canon string
	var prior *node
	if req.Key != "" {
		b, err := json.Marshal(canonical{req.Parent, req.Label, req.Profile + req.ProfileDigest, req.Model, req.Task, req.Budget, req.Continuity})
		if err != nil {
			return admission{}, SpawnReply{}, s.refuse(CodePreflightRefused, "invalid-request", err.Error(), err)
		}
		canon = string(b)
		if k, ok := s.keys[managerKey{req.Parent, req.Key}]; ok {
			// In doubt first, whatever the request: a start without a
			// terminal receipt refuses before the request is compared
			// (the reference's scope.ts spawn checks it first too).
			switch {
			case k.InDoubt || k.NeverSettled:
				return admission{}, SpawnReply{}, s.refuse(CodeInDoubt, "", string(k.ID)+" started without a terminal receipt", nil)
			case k.canon != canon:
				return admission{}, SpawnReply{}, s.refuse(CodeKeyConflict, "", "key "+req.Key+" was used by "+string(k.ID)+" with a different request; use a new key for different work", nil)
			case k.live():
				return admission{}, SpawnReply{}, s.refuse(CodeDuplicateKey, "", "worker "+string(k.ID)+" under this key is still live; wait for it to settle, or use a different key for different work", nil)
			case k.State == StateDone:
				st := *k.Settlement
				return admission{}, SpawnReply{Node: k.ID, Seq: k.Seq, Assignment: "key:" + req.Key, Reserved: k.Reserved,
					Resumed: ResumedCompleted, ResumeOf: k.ResumeOf, Settlement: &st, Live: s.live, FreeSlots: s.freeSlotsLocked()}, nil
			default:
				prior = k
			}
		}
	}

	// 4. live workers. A replayed spawn was admitted by the process
	// that journaled it, whose live count left out the workers it had
	// found in doubt, which a replay counts live until it ends.
	if s.opts.MaxLiveWorkers > 0 && s.live >= s.opts.MaxLiveWorkers && !s.replaying {
		return admission{}, SpawnReply{}, s.refuse(CodeMaxLiveWorkers, "", strconv.Itoa(s.live)+" of this run's "+strconv.Itoa(s.opts.MaxLiveWorkers)+" worker slots are taken; wait for a worker to settle before spawning another", nil)
	}

	// 5. depth.
	if s.opts.MaxDepth > 0 && depth > s.opts.MaxDepth {
		return admission{}, SpawnReply{}, s.refuse(CodeDepthExceeded, "", "this worker would sit at depth "+strconv.Itoa(depth)+", past the run's maxDepth "+strconv.Itoa(s.opts.MaxDepth)+"; a worker at the deepest level cannot start children of its own", nil)
	}

	// 6. continuity.
	var resumeOf NodeID
	if req.Continuity == ContinuityResume {
		label := labelOf(req.Label, req.Profile)
		if l := s.labels[labelKey{req.Parent, label}]; l != nil {
			if l.live > 0 {
				for _, n := range slices.Backward(l.nodes) {
					if n.live() {
						return admission{}, SpawnReply{}, s.refuse(CodeResumeWhileLive, "", string(n.ID)+" is live; steer it instead", nil)
					}
				}
			}
			if l.settled != nil {
				resumeOf = l.settled.ID
			}
		}
		if resumeOf == "" {
			return admission{}, SpawnReply{}, s.refuse(CodeResumeNoPrior, "", "no settled worker labelled "+label, nil)
		}
	}

	return admission{depth: depth, canon: canon, prior: prior, resumeOf: resumeOf, admit: true}, SpawnReply{}, nil
}

// admit is Spawn after authorizeFirst: the fences again, Preflight, and
// the budget. A replayed spawn comes here directly: the process that
// journaled it asked AuthorizeSpawn.
func (s *Scope) admit(req SpawnRequest) (SpawnReply, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, reply, err := s.fencesLocked(&req)
	if !a.admit {
		return reply, err
	}
	depth, canon, prior, resumeOf := a.depth, a.canon, a.prior, a.resumeOf

	// 7. preflight (AuthorizeSpawn answered before: Spawn).
	if h := s.opts.Preflight; h != nil {
		if err := h(req); err != nil {
			return SpawnReply{}, s.refuse(CodePreflightRefused, "preflight", err.Error(), err)
		}
	}

	// 8. budget.
	// A nested manager's children reserve from its carved pool.
	budget := mergeBudget(req.Budget, s.opts.PerWorker)
	from, owner := s.pool, poolOwner{}
	var carve *carved
	if c := s.carverLocked(req.Parent, true); c != nil {
		carve = c.carve
		from, owner = carve.pool, poolOwner{manager: c.ID}
	}
	reserve := from.Reserve
	if s.replaying {
		reserve = from.Readmit
	}
	ticket, err := reserve(budget)
	if err != nil {
		return SpawnReply{}, s.reserveRefusal(err, from, owner, budget)
	}

	s.seq++
	n := &node{NodeInfo: NodeInfo{ID: ChildID(req.Parent, s.seq), Parent: req.Parent, Seq: s.seq, Depth: depth,
		Label: req.Label, Profile: req.Profile, Model: req.Model, Key: req.Key, State: StatePending,
		Reserved: budget, ResumeOf: resumeOf}, ticket: ticket, canon: canon}
	s.nodes[n.ID] = n
	s.order = append(s.order, n)
	if carve != nil {
		carve.open++
	}
	s.mirrorLocked(carve, n)
	s.live++
	l := s.labelledOf(n)
	l.nodes = append(l.nodes, n)
	l.live++
	reply = SpawnReply{Node: n.ID, Seq: n.Seq, Reserved: budget, ResumeOf: resumeOf}
	if req.Key != "" {
		n.prior = s.keys[managerKey{req.Parent, req.Key}]
		s.keys[managerKey{req.Parent, req.Key}] = n
		reply.Assignment = "key:" + req.Key
	} else {
		reply.Assignment = "ordinal:" + strconv.Itoa(s.ordinals[req.Parent])
		s.ordinals[req.Parent]++
	}
	n.assignment = reply.Assignment
	if prior != nil {
		reply.Resumed, reply.PriorWorker = ResumedRetried, prior.ID
		reply.PriorReason = string(prior.State)
		if prior.Settlement != nil && prior.Settlement.Reason != "" {
			reply.PriorReason = prior.Settlement.Reason
		}
	}
	reply.Live, reply.FreeSlots = s.live, s.freeSlotsLocked()
	return reply, nil
}

// resumable reports whether a resume spawn of label under parent (the
// root when empty) finds a worker to answer it: a settled one to
// re-attach to, or a live one it is refused for (resume-while-live).
// Without either, an explicit resume is refused resume-no-prior, and a
// resume Options.ContinuityByProfile defaulted spawns fresh instead.
func (s *Scope) resumable(parent NodeID, label string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if parent == "" {
		parent = s.root
	}
	l := s.labels[labelKey{parent, label}]
	if l == nil {
		return false
	}
	if l.settled != nil {
		return true
	}
	for _, n := range l.nodes {
		if n.live() {
			return true
		}
	}
	return false
}

// restoreResumeOf sets a replayed node's ResumeOf to the settled worker
// its journaled spawn resolved to re-attach to (Record.ResumeOf); of
// must be a node the replay admitted before id.
func (s *Scope) restoreResumeOf(id, of NodeID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.nodes[id]
	if !ok {
		return fmt.Errorf("no node %s", id)
	}
	p, ok := s.nodes[of]
	if !ok || p.Seq >= n.Seq {
		return fmt.Errorf("%s resumes %s, which the journal did not spawn before it", id, of)
	}
	n.ResumeOf = of
	return nil
}

func labelOf(label, profile string) string {
	if label != "" {
		return label
	}
	return profile
}

// poolOwner names the pool a spawn reserves from in a refusal's words:
// the run's (the root budget) or the one carved for a nested manager.
type poolOwner struct{ manager NodeID }

// pool is the subject of a budget refusal's reason.
func (o poolOwner) pool() string {
	if o.manager != "" {
		return "the pool granted to manager " + string(o.manager)
	}
	return "the run's pool"
}

// larger is the remedy beyond a smaller request.
func (o poolOwner) larger() string {
	if o.manager != "" {
		return "ask for a larger budget for manager " + string(o.manager)
	}
	return "ask the caller for a larger root budget"
}

// budgetField is the spawn_worker budget member that sets ch.
func budgetField(ch string) string {
	switch ch {
	case ledger.ChannelTokens:
		return "budget.maxTokens"
	case ledger.ChannelIterations:
		return "budget.maxIterations"
	case ledger.ChannelUSD:
		return "budget.maxUsd"
	}
	return ""
}

// wireAmount is a ledger quantity in spawn_worker's units: dollars for
// usd (micro-dollars in the ledger), the integer itself otherwise.
func wireAmount(ch string, v int64) float64 {
	if ch == ledger.ChannelUSD {
		return float64(v) / 1e6
	}
	return float64(v)
}

func formatAmount(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// shortfallReason is a budget-exhausted refusal's reason: what was free,
// what the spawn asked, and the largest request that fits (or that none
// does), so the driver sizes its next request in one step.
func shortfallReason(sf *Shortfall, owner poolOwner, held bool) string {
	// Waiting helps only when running workers hold some of the channel:
	// what they do not spend returns to free as they settle.
	larger := owner.larger()
	if held {
		larger = "wait for running workers to settle, or " + larger
	}
	if sf.ClosedByUnknownSpend {
		return owner.pool() + " admits no more spawns: work whose dollar cost went unreported ran under its dollar ceiling, " +
			"so its dollar balance is unknown and no smaller request fits; " + owner.larger() + " with a measurable dollar budget"
	}
	name, field := sf.Channel, budgetField(sf.Channel)
	if field == "" {
		// A named resource comes from the per-worker default; no
		// spawn_worker argument sets it.
		res := strings.TrimPrefix(sf.Channel, "resource:")
		if sf.Free <= 0 {
			return owner.pool() + " has no " + res + " left to reserve (this spawn's per-worker " + res + " budget is " +
				formatAmount(sf.Requested) + "); " + larger
		}
		return owner.pool() + " has " + formatAmount(sf.Free) + " " + res + " free and this spawn's per-worker " + res +
			" budget is " + formatAmount(sf.Requested) + "; no spawn_worker argument lowers it, so " + larger
	}
	if sf.Channel == ledger.ChannelUSD {
		name = "dollars"
	}
	asked := "this spawn asked for " + field + " " + formatAmount(sf.Requested)
	if sf.Free <= 0 {
		return owner.pool() + " has no " + name + " left to reserve (" + asked + "); " + larger
	}
	most := "spawn again with " + field + " at most " + formatAmount(sf.Free)
	if sf.Channel != ledger.ChannelIterations {
		// The driver's own turns are metered from the same pool before
		// its retry is admitted.
		most += " (less, since your own turns draw " + name + " from it first)"
	}
	free := formatAmount(sf.Free) + " " + name
	if sf.Channel == ledger.ChannelUSD {
		free = "$" + formatAmount(sf.Free)
	}
	return owner.pool() + " has " + free + " free and " + asked + "; " + most + ", or " + owner.larger()
}

// reserveRefusal turns the pool's refusal of budget into the driver's:
// budget-exhausted with the Shortfall that sizes its next request,
// usd-unbudgeted with the Hint that no smaller maxUsd helps.
func (s *Scope) reserveRefusal(err error, from *ledger.Pool, owner poolOwner, budget ledger.Budget) *Refusal {
	var ex *ledger.ExhaustedError
	switch {
	case errors.As(err, &ex):
		sf := &Shortfall{Channel: ex.Channel, Requested: wireAmount(ex.Channel, ex.Requested), Free: wireAmount(ex.Channel, max(ex.Free, 0))}
		held := from.Readout().Channels[ex.Channel].Reserved > 0
		r := s.refuse(CodeBudgetExhausted, ex.Channel, shortfallReason(sf, owner, held), err)
		r.Shortfall = sf
		return r
	case errors.Is(err, ledger.ErrUSDUnbudgeted):
		declares := "the run's root budget declares no dollars"
		if owner.manager != "" {
			declares = "the budget granted to manager " + string(owner.manager) + " declares no dollars"
		}
		r := s.refuse(CodeUSDUnbudgeted, "", declares+", so this spawn's budget.maxUsd cannot be reserved", err)
		r.Hint = declares + ", so no maxUsd, however small, will be admitted; spawn without budget.maxUsd, or ask the caller for a dollar budget"
		return r
	case errors.Is(err, ledger.ErrUSDTainted):
		var asked int64
		if budget.MicroUSD != nil {
			asked = *budget.MicroUSD
		}
		sf := &Shortfall{Channel: ledger.ChannelUSD, Requested: wireAmount(ledger.ChannelUSD, asked), ClosedByUnknownSpend: true}
		r := s.refuse(CodeBudgetExhausted, "usd-tainted", shortfallReason(sf, owner, false), err)
		r.Shortfall = sf
		return r
	case errors.Is(err, ledger.ErrDeadline):
		return s.refuse(CodeBudgetExhausted, "deadline", "the run's deadline has passed, so no further worker can start", err)
	default:
		return s.refuse(CodePreflightRefused, "invalid-budget", err.Error(), err)
	}
}

// mergeBudget overlays over on base field by field, copying every value
// so the reservation never aliases the caller's memory.
func mergeBudget(over, base ledger.Budget) ledger.Budget {
	pick := func(o, b *int64) *int64 {
		if o == nil {
			o = b
		}
		if o == nil {
			return nil
		}
		v := *o
		return &v
	}
	out := ledger.Budget{Tokens: pick(over.Tokens, base.Tokens), Iterations: pick(over.Iterations, base.Iterations),
		MicroUSD: pick(over.MicroUSD, base.MicroUSD)}
	if len(over.Resources)+len(base.Resources) > 0 {
		out.Resources = maps.Clone(base.Resources)
		if out.Resources == nil {
			out.Resources = map[string]int64{}
		}
		maps.Copy(out.Resources, over.Resources)
	}
	return out
}

func (s *Scope) liveNode(id NodeID) (*node, error) {
	if s.closed {
		return nil, ErrScopeClosed
	}
	n, ok := s.nodes[id]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownNode, id)
	}
	return n, nil
}

// Transition moves a live node to a non-terminal state (acquiring,
// running, waiting). Terminal states are reached by Settle, which
// accounts for the spend.
func (s *Scope) Transition(id NodeID, to State) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.liveNode(id)
	if err != nil {
		return err
	}
	if to.Terminal() || !n.live() || !n.State.CanTransition(to) {
		return &TransitionError{Node: id, From: n.State, To: to}
	}
	n.State = to
	return nil
}

// Settle records how a live node ended: its observed spend is committed
// and the rest of its reservation freed; a channel whose spend is
// unknown (nil) is charged at the node's ceiling and named in the spend
// gaps. The node's slot is freed. A negative quantity is treated as
// unknown and reported as a wrapped ledger.ErrInvalid after the node has
// settled.
func (s *Scope) Settle(id NodeID, r Result) (Settlement, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.liveNode(id)
	if err != nil {
		return Settlement{}, err
	}
	if !r.State.Terminal() || !n.live() || !n.State.CanTransition(r.State) {
		return Settlement{}, &TransitionError{Node: id, From: n.State, To: r.State}
	}
	spent := cloneSpend(r.Spent)
	var invalid error
	if n.carve != nil && negative(spent) {
		// Its subtree's sum would hide it: refused here, as the pool
		// refuses any other node's.
		invalid = fmt.Errorf("%w: %s settled a negative quantity", ledger.ErrInvalid, id)
		spent = dropInvalid(spent)
	}
	settleErr := errors.Join(invalid, s.settleTicketLocked(n, spent, true))
	if settleErr != nil {
		spent = dropInvalid(spent)
	}
	s.settled++
	st := Settlement{Node: id, Seq: n.Seq, Order: s.settled, State: r.State, Spent: spent, Reason: r.Reason,
		BudgetViolation: budgetViolation(n.Reserved, spent)}
	n.State, n.Settlement = r.State, &st
	s.live--
	l := s.labelledOf(n)
	l.live--
	if l.settled == nil || n.Seq > l.settled.Seq {
		l.settled = n
	}
	return st, settleErr
}

// forget undoes the admission of id, a spawn whose record the journal
// refused (§3.6 Durability: the verb fails and nothing happened): its
// reservation is released uncharged and it leaves the tree, its key
// and its label, so no reader — observe_agent, the result's tree and
// down count, a later spawn's key or continuity — sees a worker the
// journal never held. When it is the newest admission its sequence
// number and ordinal are given back, so the next spawn gets the id a
// resume replaying the journal will give it. Only a pending node (its
// worker never started) can be forgotten.
func (s *Scope) forget(id NodeID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.nodes[id]
	if n == nil || n.State != StatePending || n.ticket == nil {
		return fmt.Errorf("supervise: cannot forget %s: not a pending admission", id)
	}
	err := s.settleTicketLocked(n, zeroSpend(), false)
	delete(s.nodes, id)
	if i := slices.Index(s.order, n); i >= 0 {
		s.order = slices.Delete(s.order, i, i+1)
	}
	s.live--
	l := s.labelledOf(n)
	if i := slices.Index(l.nodes, n); i >= 0 {
		l.nodes = slices.Delete(l.nodes, i, i+1)
	}
	l.live--
	if n.Key != "" {
		k := managerKey{n.Parent, n.Key}
		if s.keys[k] == n {
			if n.prior != nil {
				s.keys[k] = n.prior
			} else {
				delete(s.keys, k)
			}
		}
	} else if n.assignment == "ordinal:"+strconv.Itoa(s.ordinals[n.Parent]-1) {
		s.ordinals[n.Parent]--
	}
	if n.Seq == s.seq {
		s.seq--
	}
	return err
}

// Labelled returns the newest node spawned under parent with label (its
// label, or its profile name when it has none) and whether there is one:
// a lookup of the scope's label index, not a scan of the tree.
func (s *Scope) Labelled(parent NodeID, label string) (NodeInfo, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.labels[labelKey{parent, label}]
	if l == nil || len(l.nodes) == 0 {
		return NodeInfo{}, false
	}
	return l.nodes[len(l.nodes)-1].NodeInfo, true
}

// labelledOf is n's labelKey's nodes, made on first use; s.mu is held.
func (s *Scope) labelledOf(n *node) *labelled {
	k := labelKey{n.Parent, labelOf(n.Label, n.Profile)}
	l := s.labels[k]
	if l == nil {
		if s.labels == nil {
			s.labels = map[labelKey]*labelled{}
		}
		l = &labelled{}
		s.labels[k] = l
	}
	return l
}

// Cancel settles a live node as cancelled with what it was observed to
// spend.
func (s *Scope) Cancel(id NodeID, spent ledger.Spend) (Settlement, error) {
	return s.Settle(id, Result{State: StateCancelled, Spent: spent, Reason: "cancelled"})
}

// MarkInDoubt records that a live node's outcome is unknown (its executor
// was lost before a terminal receipt): it is charged at its ceiling,
// leaves the live count, stays named in the spend gaps, and its key
// refuses in-doubt until the exact execution is recovered.
func (s *Scope) MarkInDoubt(id NodeID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.liveNode(id)
	if err != nil {
		return err
	}
	if !n.live() {
		return &TransitionError{Node: id, From: n.State, To: n.State}
	}
	_ = s.settleTicketLocked(n, ledger.Spend{}, false) // all unknown: charged in full; cannot fail on an open ticket
	n.InDoubt = true
	s.live--
	s.labelledOf(n).live--
	return nil
}

// Abort refuses every later spawn (scope-aborted). Live nodes keep their
// reservations until they settle.
func (s *Scope) Abort() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.aborted = true
}

// Close settles the scope: the driver has returned. Every later spawn is
// refused scope-settled, every node still live is charged at its
// ceiling and marked never-settled, and the final totals are returned.
func (s *Scope) Close() Totals {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		for _, n := range s.order {
			if n.live() {
				_ = s.settleTicketLocked(n, ledger.Spend{}, false) // charged in full
				n.NeverSettled = true
				s.live--
				s.labelledOf(n).live--
			}
		}
	}
	return s.totalsLocked()
}

// Aborted reports whether Abort was called; Closed whether Close was.
func (s *Scope) Aborted() bool { s.mu.Lock(); defer s.mu.Unlock(); return s.aborted }

// Closed reports whether Close was called.
func (s *Scope) Closed() bool { s.mu.Lock(); defer s.mu.Unlock(); return s.closed }

// Live returns the number of live nodes and the free slots (nil when
// MaxLiveWorkers is not set).
func (s *Scope) Live() (int, *int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.live, s.freeSlotsLocked()
}

// Node returns a view of one node.
func (s *Scope) Node(id NodeID) (NodeInfo, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.nodes[id]
	if !ok {
		return NodeInfo{}, false
	}
	return n.NodeInfo, true
}

// assignmentOf returns node id's assignment under the manager that
// spawned it ("key:<k>" or "ordinal:<n>"), "" for a node the scope does
// not hold.
func (s *Scope) assignmentOf(id NodeID) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n, ok := s.nodes[id]; ok {
		return n.assignment
	}
	return ""
}

// nodesFrom returns at most max nodes in admission order from the
// from-th on, and the index to go on from: a page of Nodes, for a reader
// that needs only the first few that qualify.
func (s *Scope) nodesFrom(from, max int) ([]NodeInfo, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	end := min(len(s.order), from+max)
	if from >= end {
		return nil, from
	}
	out := make([]NodeInfo, 0, end-from)
	for _, n := range s.order[from:end] {
		out = append(out, n.NodeInfo)
	}
	return out, end
}

// eachNode calls f with every node in admission (seq) order, under the
// scope's lock: f reads the node in place (no copy of the tree, which a
// run's end otherwise makes several times) and must neither keep the
// pointer nor call the scope.
func (s *Scope) eachNode(f func(*NodeInfo)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.order {
		f(&n.NodeInfo)
	}
}

// nodeCount is how many nodes the scope admitted.
func (s *Scope) nodeCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.order)
}

// Nodes returns every node in admission (seq) order.
func (s *Scope) Nodes() []NodeInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]NodeInfo, len(s.order))
	for i, n := range s.order {
		out[i] = n.NodeInfo
	}
	return out
}

func cloneSpend(sp ledger.Spend) ledger.Spend {
	cp := func(v *int64) *int64 {
		if v == nil {
			return nil
		}
		c := *v
		return &c
	}
	out := ledger.Spend{Tokens: cp(sp.Tokens), Iterations: cp(sp.Iterations), MicroUSD: cp(sp.MicroUSD), TokensFloor: cp(sp.TokensFloor)}
	if sp.Resources != nil {
		out.Resources = make(map[string]*int64, len(sp.Resources))
		for k, v := range sp.Resources {
			out.Resources[k] = cp(v)
		}
	}
	return out
}

// negative reports whether sp holds a negative quantity.
func negative(sp ledger.Spend) bool {
	neg := func(v *int64) bool { return v != nil && *v < 0 }
	if neg(sp.Tokens) || neg(sp.Iterations) || neg(sp.MicroUSD) || neg(sp.TokensFloor) {
		return true
	}
	for _, v := range sp.Resources {
		if neg(v) {
			return true
		}
	}
	return false
}

// dropInvalid is sp without the quantities the pool refuses (negative,
// or past ledger.MaxQuantity): unknown, as the pool charges them.
func dropInvalid(sp ledger.Spend) ledger.Spend {
	neg := func(v *int64) *int64 {
		if v != nil && (*v < 0 || *v > ledger.MaxQuantity) {
			return nil
		}
		return v
	}
	sp.Tokens, sp.Iterations, sp.MicroUSD, sp.TokensFloor = neg(sp.Tokens), neg(sp.Iterations), neg(sp.MicroUSD), neg(sp.TokensFloor)
	for k, v := range sp.Resources {
		sp.Resources[k] = neg(v)
	}
	return sp
}

// continuityWord is c as spawn_worker's reply spells it: "fresh" for
// the zero value.
func continuityWord(c Continuity) string {
	if c == ContinuityFresh {
		return string(continuityFreshWord)
	}
	return string(c)
}
