package supervise

import (
	"time"

	"github.com/agentrt/agentrt/ledger"
)

// A nested manager's subtree draws on its own reservation, not on the
// run's pool (the reference's nested scope: tangle-network/agent-runtime
// src/runtime/supervise/scope.ts makeNestedScopeSeam mounts the nested
// scope on createBudgetPool(childBudget), "a child pool backed by the
// driver's already-reserved allocation", and driver-executor.ts
// reconciles the driver's one parent ticket with its child work plus its
// own inference, its allocation not refundable until every descendant
// stopped). A node that spawns children gets a carved pool whose
// capacity is its reservation: its children reserve from it (a spawn
// that does not fit is refused budget-exhausted, or usd-unbudgeted when
// the node reserved no dollars), its own metered turns are observed in
// it (ObserveNode), and its router loop's turn gate holds what its
// children hold (gateLocked). When the node settles, its one ticket in
// the pool it drew on is charged its whole subtree: what it spent itself
// and what its children were charged (a child's unreported channel at
// its ceiling), less what spilled over already (spillLocked); settled
// while children still hold tickets, its ticket keeps its ceiling until
// the last of them settles. A node whose reservation has no token or no
// iteration ceiling cannot be carved: its children reserve from the
// pool it drew on (its nearest carvable ancestor's, else the run's), so
// a grant bounds its whole subtree however deep.
//
// MaxLiveWorkers counts the whole tree and MaxDepth every level, as the
// reference's one admission counter and maxDepth do.

// carved is a node's carved pool and what its settled children were
// charged there, per ledger channel; guarded by Scope.mu.
type carved struct {
	pool *ledger.Pool
	kids map[string]int64
	// gate is the nested manager's turn gate once its router loop made
	// one (gateLocked); gated holds, per live child, the ticket that
	// mirrors the child's token and dollar reservation on it, so what
	// its children hold is not free for the manager's next turn.
	gate  *ledger.Pool
	gated map[NodeID]*ledger.Ticket
	// spilled is, per channel, what its children's charges and
	// reservations came to beyond its ceiling (they overspent), charged
	// to the pool its ticket is in as it happened (spillLocked): its
	// ticket's settlement leaves it out.
	spilled map[string]int64
	// base is, once its owner's ticket settled, per capped channel what
	// of its children's charges and reservations that ticket covered
	// (its ceiling on a channel charged unknown): a descendant's charge
	// arriving later, past an in-doubt child's ceiling, spills from
	// there, not from the ceiling the ticket no longer holds. Nil while
	// the ticket is open.
	base map[string]int64
	// deferred holds its owner's own spend once it settled while its
	// children still held tickets here: its ticket is settled when the
	// last of them is (settleTicketLocked), as the reference's nested
	// scope refunds a driver's allocation only once every descendant
	// stopped.
	deferred *ledger.Spend
	// open counts the tickets its children hold in pool; usdCapped is
	// whether pool caps dollars (its owner reserved some): kept here so
	// a child's settlement reads no readout.
	open      int
	usdCapped bool
}

// carvable reports whether a reservation can back a carved pool.
func carvable(b ledger.Budget) bool { return b.Tokens != nil && b.Iterations != nil }

// carveLocked returns n's carved pool, made on first use, nil when n's
// reservation cannot be carved; s.mu is held.
func (s *Scope) carveLocked(n *node) *carved {
	if n.carve != nil || !carvable(n.Reserved) {
		return n.carve
	}
	p, err := ledger.NewPool(n.Reserved, ledger.PoolOptions{Deadline: s.pool.Readout().Deadline, Now: s.opts.Now})
	if err != nil {
		return nil // a reservation the run's pool admitted is a valid ceiling; not reached
	}
	n.carve = &carved{pool: p, kids: map[string]int64{}, spilled: map[string]int64{}, usdCapped: n.Reserved.MicroUSD != nil}
	return n.carve
}

// carverLocked is the node whose carved pool a child of id reserves
// from: id itself or, when id cannot be carved, its nearest ancestor
// that can (an uncarvable node is transparent: its children stay within
// the grant it drew on); nil when there is none (the run's pool). With
// make, the pool is made when missing; without, a carver that has none
// yet is nil. s.mu is held.
func (s *Scope) carverLocked(id NodeID, make bool) *node {
	for q := s.nodes[id]; q != nil && q.ID != s.root; q = s.nodes[q.Parent] {
		if !carvable(q.Reserved) {
			continue
		}
		if make {
			s.carveLocked(q)
		}
		if q.carve == nil {
			return nil
		}
		return q
	}
	return nil
}

// poolOfLocked is the pool n's ticket was drawn from: its carver's
// carved pool, else the run's.
func (s *Scope) poolOfLocked(n *node) *ledger.Pool {
	if p := s.carverLocked(n.Parent, false); p != nil {
		return p.carve.pool
	}
	return s.pool
}

// chargedLocked notes on n's carver's carved pool what n was charged
// there (spent; a nil channel at n's ceiling), and settles n's mirror on
// its carver's turn gate with the same; s.mu is held.
func (s *Scope) chargedLocked(n *node, spent ledger.Spend) {
	p := s.carverLocked(n.Parent, false)
	if p == nil {
		return
	}
	charge := func(v, ceiling *int64) *int64 {
		switch {
		case v != nil && *v >= 0:
			return v
		case ceiling != nil:
			return ceiling
		}
		return nil
	}
	add := func(ch string, v, ceiling *int64) {
		if c := charge(v, ceiling); c != nil {
			p.carve.kids[ch] += *c
		}
	}
	tokens := spent.Tokens
	if f := tokensAtLeast(spent); tokens == nil && n.Reserved.Tokens != nil && f > *n.Reserved.Tokens {
		// Unreported, but at least a floor past its ceiling: the pool
		// it was drawn from charged the floor (ledger's Settle).
		tokens = &f
	}
	add(ledger.ChannelTokens, tokens, n.Reserved.Tokens)
	add(ledger.ChannelIterations, spent.Iterations, n.Reserved.Iterations)
	if p.carve.usdCapped {
		add(ledger.ChannelUSD, spent.MicroUSD, n.Reserved.MicroUSD)
	} else {
		s.passUpUSDLocked(p, spent.MicroUSD)
	}
	for name, c := range n.Reserved.Resources {
		add("resource:"+name, spent.Resources[name], &c)
	}
	p.carve.open--
	// Any charge may take p's children past what p's ticket covers: a
	// child that overspent, spent on a channel it reserved nothing of,
	// or whose siblings already overspent.
	s.spillLocked(p)
	defer func() {
		// p settled while its children held tickets here: the last of
		// them settling settles p's.
		if own := p.carve.deferred; own != nil && p.carve.open == 0 {
			p.carve.deferred = nil
			_ = s.settleTicketLocked(p, *own, false) // its spend was checked when it settled
		}
	}()
	if t := p.carve.gated[n.ID]; t != nil {
		delete(p.carve.gated, n.ID)
		// Charged at its ceiling where unreported, as a known amount:
		// the gate is the manager's, and a child's unknown dollars do
		// not taint its turns (the carved pool refuses its next child).
		// A child that declared no dollars and reported none is
		// charged none here: the gate would otherwise be tainted.
		zero := int64(0)
		usd := charge(spent.MicroUSD, n.Reserved.MicroUSD)
		if usd == nil {
			usd = &zero
		}
		_ = p.carve.gate.Settle(t, ledger.Spend{Tokens: charge(tokens, n.Reserved.Tokens), Iterations: &zero,
			MicroUSD: usd}) // an open ticket of known channels: cannot fail
	}
}

// spillLocked charges the pool p's ticket is in with what p's
// children's charges came to beyond what p's ticket covers (its
// ceiling, or once settled its base) and was not charged yet: a child
// that overspent its reservation (a ledger.Violation in p's carved
// pool) spent it from the run, and p's ticket, which holds only p's
// ceiling until p settles, would hide it. Live reservations are left
// out: one that settles for less would have spilt what was never spent,
// past recall when p's ticket is then charged its ceiling.
// Up p's ancestry each carved pool notes it as its child's charge in
// turn; s.mu is held.
func (s *Scope) spillLocked(p *node) {
	if p == nil || p.carve == nil {
		return
	}
	var over ledger.Spend
	spilt := false
	// A carved pool caps exactly the channels p's reservation has a
	// ceiling on.
	spill := func(ch string, ceiling *int64) *int64 {
		zero := int64(0)
		if ceiling == nil {
			return &zero
		}
		covered := *ceiling
		if b, ok := p.carve.base[ch]; ok {
			covered = b
		}
		v := p.carve.kids[ch] - covered - p.carve.spilled[ch]
		if v <= 0 {
			return &zero
		}
		p.carve.spilled[ch] += v
		spilt = true
		return &v
	}
	over.Tokens = spill(ledger.ChannelTokens, p.Reserved.Tokens)
	over.Iterations = spill(ledger.ChannelIterations, p.Reserved.Iterations)
	over.MicroUSD = spill(ledger.ChannelUSD, p.Reserved.MicroUSD)
	for name, c := range p.Reserved.Resources {
		if v := spill("resource:"+name, &c); *v > 0 {
			if over.Resources == nil {
				over.Resources = map[string]*int64{}
			}
			over.Resources[name] = v
		}
	}
	if !spilt {
		return
	}
	s.poolOfLocked(p).Observe(over)
	if q := s.carverLocked(p.Parent, false); q != nil {
		for ch, v := range map[string]*int64{ledger.ChannelTokens: over.Tokens, ledger.ChannelIterations: over.Iterations, ledger.ChannelUSD: over.MicroUSD} {
			q.carve.kids[ch] += *v
		}
		for name, v := range over.Resources {
			q.carve.kids["resource:"+name] += *v
		}
		s.spillLocked(q)
	}
}

// passUpUSDLocked charges dollars v (nil: unknown) that a child of p
// spent in p's carved pool, which caps no dollars, where they are
// bounded: the nearest pool up p's ancestry that caps them (noted as
// that pool's owner's children's charge), else the run's pool. A
// carved pool does not bound a channel it does not cap, so the run's
// totals see such spend as it settles, not when p does; s.mu is held.
func (s *Scope) passUpUSDLocked(p *node, v *int64) {
	zero := int64(0)
	sp := ledger.Spend{Tokens: &zero, Iterations: &zero, MicroUSD: v}
	for q := p; ; {
		pool := s.poolOfLocked(q)
		if pool == s.pool {
			pool.Observe(sp)
			return
		}
		owner := s.carverLocked(q.Parent, false)
		if owner.carve.usdCapped {
			pool.Observe(sp)
			if v != nil && *v >= 0 {
				owner.carve.kids[ledger.ChannelUSD] += *v
				s.spillLocked(owner) // its ticket may have settled already
			}
			return
		}
		q = owner
	}
}

// gateShare is the part of a child's reservation b its parent's turn
// gate g mirrors: its tokens, and its dollars when g caps them.
func gateShare(g *ledger.Pool, b ledger.Budget) ledger.Budget {
	out := ledger.Budget{Tokens: b.Tokens}
	if g.Readout().Channels[ledger.ChannelUSD].Capped {
		out.MicroUSD = b.MicroUSD
	}
	return out
}

// mirrorLocked holds child n's reservation on its parent's turn gate,
// when the parent has one; s.mu is held. A reservation the gate cannot
// hold (its manager's turns overshot) is taken from it as spent: the
// gate then only errs toward refusing the manager's turns.
func (s *Scope) mirrorLocked(parent *carved, n *node) {
	if parent == nil || parent.gate == nil {
		return
	}
	share := gateShare(parent.gate, n.Reserved)
	t, err := parent.gate.Readmit(share)
	if err != nil {
		parent.gate.Observe(ledger.Spend{Tokens: share.Tokens, MicroUSD: share.MicroUSD, Iterations: new(int64)})
		return
	}
	parent.gated[n.ID] = t
}

// gateLocked makes the turn gate of nested manager id's router loop:
// a pool of left (what its reservation holds once its metered turns are
// taken off) less what its settled children were charged in its carved
// pool, its live children's reservations held on it (mirrorLocked), and
// every child admitted from now on held on it too until it settles. A
// manager whose children reserve from the run's pool gets a gate of
// left alone. s.mu is held.
func (s *Scope) gateLocked(id NodeID, left ledger.Budget, now func() time.Time) (*ledger.Pool, error) {
	n := s.nodes[id]
	var c *carved
	if n != nil {
		c = s.carveLocked(n)
	}
	if c != nil {
		less := func(v *int64, ch string) {
			if v != nil {
				*v = max(0, *v-c.kids[ch])
			}
		}
		less(left.Tokens, ledger.ChannelTokens)
		less(left.MicroUSD, ledger.ChannelUSD)
	}
	g, err := ledger.NewPool(left, ledger.PoolOptions{Now: now})
	if err != nil || c == nil {
		return g, err
	}
	c.gate, c.gated = g, map[NodeID]*ledger.Ticket{}
	for _, k := range s.order {
		if k.live() && k.Parent != s.root && s.carverLocked(k.Parent, false) == n {
			s.mirrorLocked(c, k)
		}
	}
	return g, nil
}

// turnGate is gateLocked under s.mu.
func (s *Scope) turnGate(id NodeID, left ledger.Budget, now func() time.Time) (*ledger.Pool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gateLocked(id, left, now)
}

// subtreeSpendLocked is what the pool n drew on charges carved node n
// when its ticket settles, n having itself spent own: own plus its
// children's charges and its live children's reservations, less what
// spilled over already; a channel own left unknown stays unknown
// (charged at n's ceiling, or on tokens at own's floor plus the same
// when that is more). s.mu is held.
func (s *Scope) subtreeSpendLocked(n *node, own ledger.Spend) ledger.Spend {
	if n.carve == nil {
		return own
	}
	held := n.carve.pool.Readout()
	sum := func(ch string, v *int64) *int64 {
		if v == nil {
			return nil
		}
		t := *v + n.carve.kids[ch] + held.Channels[ch].Reserved - n.carve.spilled[ch]
		return &t
	}
	out := ledger.Spend{Tokens: sum(ledger.ChannelTokens, own.Tokens), Iterations: sum(ledger.ChannelIterations, own.Iterations),
		MicroUSD: sum(ledger.ChannelUSD, own.MicroUSD)}
	if own.Tokens == nil {
		// Its own tokens unreported, but at least a floor (a turn cut
		// after reporting usage): the subtree spent at least that on top
		// of its children's, so the pool charges no less (ledger's
		// Settle: the larger of the ceiling and the floor).
		if f := tokensAtLeast(own); f > 0 {
			if t := sum(ledger.ChannelTokens, &f); *t > 0 && *t <= ledger.MaxQuantity {
				out.TokensFloor = t
			}
		}
	}
	if len(own.Resources) > 0 {
		out.Resources = make(map[string]*int64, len(own.Resources))
		for name, v := range own.Resources {
			out.Resources[name] = sum("resource:"+name, v)
		}
	}
	return out
}

// settleTicketLocked settles n's ticket, in the pool it was drawn from,
// with own, its own spend (ledger.Spend{}: unknown on every channel),
// and notes the charge on its parent's carved pool; s.mu is held. A
// carved node is charged its whole subtree less what of it spilled over
// already (subtreeSpendLocked); on a channel its own spend left unknown
// it is charged its ceiling. When mayDefer and its children still hold
// tickets in its carved pool, its ticket keeps holding its ceiling
// until the last of them settles (carved.deferred); a node settled all
// unknown (in doubt, never settled) is charged its ceiling at once,
// which holds whatever its children still spend.
func (s *Scope) settleTicketLocked(n *node, own ledger.Spend, mayDefer bool) error {
	if c := n.carve; c != nil && mayDefer && c.open > 0 {
		// Settled while its children still hold tickets: its ticket
		// holds its ceiling until the last of them settles.
		c.deferred = &own
		return nil
	}
	charged := s.subtreeSpendLocked(n, own)
	if c := n.carve; c != nil {
		held := c.pool.Readout()
		c.base = map[string]int64{}
		cover := func(ch string, v, ceiling *int64) {
			switch {
			case ceiling == nil:
			case v != nil:
				c.base[ch] = c.kids[ch] + held.Channels[ch].Reserved - c.spilled[ch]
			default:
				c.base[ch] = *ceiling
			}
		}
		cover(ledger.ChannelTokens, charged.Tokens, n.Reserved.Tokens)
		cover(ledger.ChannelIterations, charged.Iterations, n.Reserved.Iterations)
		cover(ledger.ChannelUSD, charged.MicroUSD, n.Reserved.MicroUSD)
		for name, r := range n.Reserved.Resources {
			cover("resource:"+name, charged.Resources[name], &r)
		}
	}
	err := s.poolOfLocked(n).Settle(n.ticket, charged)
	n.ticket = nil
	s.chargedLocked(n, charged)
	return err
}

// ObserveNode charges a nested manager's own model turn sp to its
// carved pool (made when missing), so its children see the room it
// left; its spend is settled with it. A node that is not live, or whose
// reservation cannot be carved, is not changed.
func (s *Scope) ObserveNode(id NodeID, sp ledger.Spend) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.nodes[id]
	if n == nil || !n.live() {
		return
	}
	if c := s.carveLocked(n); c != nil {
		c.pool.Observe(sp)
	}
}

// Carved returns the readout of node id's carved pool: its reservation,
// what its children reserved and were charged, and what it observed
// itself. ok is false when the node never carved one.
func (s *Scope) Carved(id NodeID) (r ledger.Readout, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.nodes[id]
	if n == nil || n.carve == nil {
		return ledger.Readout{}, false
	}
	return n.carve.pool.Readout(), true
}

// carvedFor reports whether a child of parent reserves from a carved
// pool (not the run's).
func (s *Scope) carvedFor(parent NodeID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return parent != "" && s.carverLocked(parent, false) != nil
}
