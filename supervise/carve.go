package supervise

import "github.com/agentrt/agentrt/ledger"

// A nested manager's subtree draws on its own reservation, not on the
// run's pool (the reference's nested scope: tangle-network/agent-runtime
// src/runtime/supervise/scope.ts makeNestedScopeSeam mounts the nested
// scope on createBudgetPool(childBudget), "a child pool backed by the
// driver's already-reserved allocation", and driver-executor.ts
// reconciles the driver's one parent ticket with its child work plus its
// own inference). A node that spawns children gets a carved pool whose
// capacity is its reservation: its children reserve from it (a spawn
// that does not fit is refused budget-exhausted, or usd-unbudgeted when
// the node reserved no dollars), its own metered turns are observed in
// it (ObserveNode), and when the node settles the run's pool is charged,
// on its one ticket, with the whole subtree: what the node itself spent,
// what its settled children were charged (a child's unreported channel
// at its ceiling), and the reservations of children still live. The
// rest of the node's reservation returns to the run's pool then, never
// before. A node whose reservation has no token or no iteration ceiling
// cannot be carved: its children reserve from the run's pool.
//
// MaxLiveWorkers counts the whole tree and MaxDepth every level, as the
// reference's one admission counter and maxDepth do.

// carved is a node's carved pool and what its settled children were
// charged there, per ledger channel; guarded by Scope.mu.
type carved struct {
	pool *ledger.Pool
	kids map[string]int64
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
	n.carve = &carved{pool: p, kids: map[string]int64{}}
	return n.carve
}

// poolOfLocked is the pool n's ticket was drawn from: its parent's
// carved pool, else the run's.
func (s *Scope) poolOfLocked(n *node) *ledger.Pool {
	if n.Parent != s.root {
		if p := s.nodes[n.Parent]; p != nil && p.carve != nil {
			return p.carve.pool
		}
	}
	return s.pool
}

// chargedLocked notes on n's parent's carved pool what n was charged
// there (spent; a nil channel at n's ceiling); s.mu is held.
func (s *Scope) chargedLocked(n *node, spent ledger.Spend) {
	if n.Parent == s.root {
		return
	}
	p := s.nodes[n.Parent]
	if p == nil || p.carve == nil {
		return
	}
	add := func(ch string, v, ceiling *int64) {
		switch {
		case v != nil && *v >= 0:
			p.carve.kids[ch] += *v
		case ceiling != nil:
			p.carve.kids[ch] += *ceiling
		}
	}
	add(ledger.ChannelTokens, spent.Tokens, n.Reserved.Tokens)
	add(ledger.ChannelIterations, spent.Iterations, n.Reserved.Iterations)
	add(ledger.ChannelUSD, spent.MicroUSD, n.Reserved.MicroUSD)
	for name, c := range n.Reserved.Resources {
		add("resource:"+name, spent.Resources[name], &c)
	}
}

// subtreeSpendLocked is what the run's pool charges carved node n when
// it settles having itself spent own: own plus its children's charges
// and its live children's reservations, a channel own left unknown
// unknown (charged at n's ceiling). s.mu is held.
func (s *Scope) subtreeSpendLocked(n *node, own ledger.Spend) ledger.Spend {
	if n.carve == nil {
		return own
	}
	held := n.carve.pool.Readout()
	sum := func(ch string, v *int64) *int64 {
		if v == nil {
			return nil
		}
		t := *v + n.carve.kids[ch] + held.Channels[ch].Reserved
		return &t
	}
	out := ledger.Spend{Tokens: sum(ledger.ChannelTokens, own.Tokens), Iterations: sum(ledger.ChannelIterations, own.Iterations),
		MicroUSD: sum(ledger.ChannelUSD, own.MicroUSD)}
	if len(own.Resources) > 0 {
		out.Resources = make(map[string]*int64, len(own.Resources))
		for name, v := range own.Resources {
			out.Resources[name] = sum("resource:"+name, v)
		}
	}
	return out
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

// carvedLoad is what node id's children hold of its carved pool on the
// token and dollar channels — reserved by the live, charged to the
// settled — and whether it has one: the room its own turns may not use.
func (s *Scope) carvedLoad(id NodeID) (tokens, microUSD int64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.nodes[id]
	if n == nil || n.carve == nil {
		return 0, 0, false
	}
	r, k := n.carve.pool.Readout(), n.carve.kids
	return r.Channels[ledger.ChannelTokens].Reserved + k[ledger.ChannelTokens], r.Channels[ledger.ChannelUSD].Reserved + k[ledger.ChannelUSD], true
}

// carvedFor reports whether a child of parent reserves from a carved
// pool (not the run's).
func (s *Scope) carvedFor(parent NodeID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.nodes[parent]
	return parent != "" && parent != s.root && n != nil && n.carve != nil
}
