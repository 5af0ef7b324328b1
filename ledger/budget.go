package ledger

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Budget is a set of ceilings. A nil field sets no ceiling on that channel
// for a pool's root; in a reservation a nil field requests nothing of it.
type Budget struct {
	Tokens     *int64
	Iterations *int64
	// MicroUSD is dollars × 1,000,000.
	MicroUSD *int64
	// Resources are named, caller-measured channels (GPU seconds, box
	// minutes, …) in their own integer units.
	Resources map[string]int64
}

// Spend is what one worker actually used. A nil quantity is unknown: the
// worker ran but its usage was not reported.
type Spend struct {
	Tokens     *int64
	Iterations *int64
	MicroUSD   *int64
	Resources  map[string]*int64
	// TokensFloor, when Tokens is nil, is a lower bound on the tokens
	// spent (a receipt that is not complete, such as a turn that failed
	// after reporting usage). The channel stays unknown; it is charged
	// the larger of its reservation and this floor, so a charge is never
	// below what is known to have been spent. Ignored when Tokens is set,
	// and when negative or above MaxQuantity.
	TokensFloor *int64
}

// floor is s's valid token floor when its tokens are unreported, else 0.
func (s Spend) floor() int64 {
	if s.Tokens != nil || s.TokensFloor == nil || *s.TokensFloor < 0 || *s.TokensFloor > MaxQuantity {
		return 0
	}
	return *s.TokensFloor
}

// MaxQuantity is the largest quantity a ceiling, a reservation or a spend
// may name: JavaScript's largest safe integer, 2^53-1 (spec §6: spend is
// validated as non-negative safe integers). A larger one is invalid: a
// reservation asking for it is refused, and a spend reporting it is
// treated as unknown rather than trusted.
const MaxQuantity int64 = 1<<53 - 1

// SpentMicroUSD converts a reported dollar spend to the micro-dollars a
// Spend holds, rounded up (a fraction of a micro-dollar was spent). It is
// the one conversion of a receipt's dollars: ok is false — the dollars
// are unknown, not some amount — for a negative, non-finite or huge
// value, whose micro-dollars would pass MaxQuantity (or overflow int64
// into a negative amount).
func SpentMicroUSD(usd float64) (micro int64, ok bool) {
	m := math.Ceil(usd * 1e6)
	if math.IsNaN(m) || m < 0 || m > float64(MaxQuantity) {
		return 0, false
	}
	return int64(m), true
}

// accountLimit bounds what a channel's reserved and committed sums may
// reach, far below int64's range, so that no sequence of valid quantities
// can overflow the arithmetic and mint capacity. A spend that would take
// a sum past it is unknown (the balance becomes a ceiling).
const accountLimit int64 = 1 << 62

// Reasons a reservation is refused.
var (
	// ErrExhausted: a requested channel does not fit the free capacity.
	ErrExhausted = errors.New("ledger: budget exhausted")
	// ErrUSDUnbudgeted: dollars were requested from a pool without a
	// dollar ceiling.
	ErrUSDUnbudgeted = errors.New("ledger: dollars requested from a pool with no dollar ceiling")
	// ErrUSDTainted: an earlier settlement reported unknown dollars under
	// a dollar ceiling, so the remaining dollar balance is unknowable.
	ErrUSDTainted = errors.New("ledger: dollar balance unknown after an unmeasured spend")
	// ErrDeadline: the pool's absolute deadline has passed.
	ErrDeadline = errors.New("ledger: budget deadline passed")
	// ErrTicket: the ticket is unknown or already settled (a ticket
	// settles once; there is no double refund).
	ErrTicket = errors.New("ledger: unknown or settled ticket")
	// ErrInvalid: a negative or otherwise malformed quantity.
	ErrInvalid = errors.New("ledger: invalid quantity")
)

// ExhaustedError names the channel that did not fit.
type ExhaustedError struct {
	Channel         string
	Requested, Free int64
}

func (e *ExhaustedError) Error() string {
	return fmt.Sprintf("ledger: budget exhausted on %s: requested %d, %d free", e.Channel, e.Requested, e.Free)
}

// Unwrap lets errors.Is(err, ErrExhausted) match.
func (e *ExhaustedError) Unwrap() error { return ErrExhausted }

// Channel names of the standard channels; named resources use
// "resource:<name>".
const (
	ChannelTokens     = "tokens"
	ChannelIterations = "iterations"
	ChannelUSD        = "usd"
)

func resourceChannel(name string) string { return "resource:" + name }

// account is one conserved channel.
type account struct {
	total, free, reserved, committed int64
	capped                           bool
	known                            bool
}

// Ticket is a single-use reservation.
type Ticket struct {
	ID       string
	Reserved map[string]int64
}

// Violation records measured spend beyond a reservation: the spend is
// committed (capacity is never minted back) and the overrun is reported,
// not hidden.
type Violation struct {
	Ticket    string
	Channel   string
	Reserved  int64
	Spent     int64
	Overspent int64
}

// Pool is a conserved budget shared by concurrent workers. It is safe for
// concurrent use.
type Pool struct {
	mu         sync.Mutex
	accounts   map[string]*account
	tickets    map[string]map[string]int64
	next       int
	deadline   time.Time
	usdTainted bool
	violations []Violation
	now        func() time.Time
}

// PoolOptions adjusts NewPool.
type PoolOptions struct {
	// Deadline, when not zero, is the absolute time after which the pool
	// admits nothing. It never slides, not even on Restore.
	Deadline time.Time
	// Now replaces time.Now (tests).
	Now func() time.Time
}

// NewPool returns a pool whose capacity is root. Tokens and iterations
// must be given; dollars and named resources are capped only when given.
func NewPool(root Budget, opts PoolOptions) (*Pool, error) {
	if root.Tokens == nil || root.Iterations == nil {
		return nil, fmt.Errorf("%w: a root budget needs token and iteration ceilings", ErrInvalid)
	}
	p := &Pool{accounts: map[string]*account{}, tickets: map[string]map[string]int64{}, deadline: opts.Deadline, now: opts.Now}
	if p.now == nil {
		p.now = time.Now
	}
	add := func(ch string, v *int64) error {
		if v == nil {
			p.accounts[ch] = &account{known: true}
			return nil
		}
		if *v < 0 || *v > MaxQuantity {
			return fmt.Errorf("%w: %s ceiling %d is negative or above %d", ErrInvalid, ch, *v, MaxQuantity)
		}
		p.accounts[ch] = &account{total: *v, free: *v, capped: true, known: true}
		return nil
	}
	for _, c := range []struct {
		ch string
		v  *int64
	}{{ChannelTokens, root.Tokens}, {ChannelIterations, root.Iterations}, {ChannelUSD, root.MicroUSD}} {
		if err := add(c.ch, c.v); err != nil {
			return nil, err
		}
	}
	for name, limit := range root.Resources {
		if err := add(resourceChannel(name), &limit); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func requested(b Budget) (map[string]int64, error) {
	req := map[string]int64{}
	for _, c := range []struct {
		ch string
		v  *int64
	}{{ChannelTokens, b.Tokens}, {ChannelIterations, b.Iterations}, {ChannelUSD, b.MicroUSD}} {
		if c.v == nil {
			continue
		}
		if *c.v < 0 || *c.v > MaxQuantity {
			return nil, fmt.Errorf("%w: %s request %d is negative or above %d", ErrInvalid, c.ch, *c.v, MaxQuantity)
		}
		req[c.ch] = *c.v
	}
	for name, v := range b.Resources {
		if v < 0 || v > MaxQuantity {
			return nil, fmt.Errorf("%w: resource %s request %d is negative or above %d", ErrInvalid, name, v, MaxQuantity)
		}
		req[resourceChannel(name)] = v
	}
	return req, nil
}

// Reserve moves the whole of b from free to reserved, atomically across
// channels, and returns the ticket to settle. It refuses (before any
// spend can happen), first match wins: when the deadline passed
// (ErrDeadline); when the dollar channel is tainted (ErrUSDTainted); when
// the request is malformed (ErrInvalid: a capped named resource it does
// not declare, a channel the pool does not budget); when tokens, then
// iterations, do not fit (*ExhaustedError); when it asks more than $0 of
// a pool without a dollar ceiling (ErrUSDUnbudgeted); when dollars, then
// named resources in name order, do not fit (*ExhaustedError).
func (p *Pool) Reserve(b Budget) (*Ticket, error) { return p.reserve(b, true) }

// Readmit is Reserve for a reservation a journal already holds, made
// again when a run is resumed and its journal replayed: every rule of
// Reserve holds except the deadline, which admitted that work once
// already. A resume past the deadline replays what was admitted before
// it, and admits nothing new (Reserve refuses).
func (p *Pool) Readmit(b Budget) (*Ticket, error) { return p.reserve(b, false) }

func (p *Pool) reserve(b Budget, deadline bool) (*Ticket, error) {
	req, err := requested(b)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if deadline && !p.deadline.IsZero() && !p.now().Before(p.deadline) {
		return nil, ErrDeadline
	}
	usd := p.accounts[ChannelUSD]
	if usd.capped && p.usdTainted {
		return nil, ErrUSDTainted
	}
	for ch, a := range p.accounts {
		if a.capped && ch != ChannelTokens && ch != ChannelIterations && ch != ChannelUSD {
			if _, ok := req[ch]; !ok {
				return nil, fmt.Errorf("%w: the request does not declare enforced channel %s", ErrInvalid, ch)
			}
		}
	}
	for ch, v := range req {
		a, ok := p.accounts[ch]
		if !ok {
			return nil, fmt.Errorf("%w: channel %s is not budgeted by this pool", ErrInvalid, ch)
		}
		if a.reserved > accountLimit-v {
			return nil, fmt.Errorf("%w: channel %s has %d reserved; %d more would overflow it", ErrInvalid, ch, a.reserved, v)
		}
	}
	// Spec §6 order: tokens, iterations, then dollars must fit, and a
	// dollar request against a pool without a dollar ceiling is refused
	// only once tokens and iterations fit (an exhausted channel is the
	// fact to act on first); $0 asks nothing of that channel and is
	// admitted. Named resources follow in name order, so the refusal
	// names the same channel every time.
	fits := func(ch string) error {
		v, asked := req[ch]
		if a := p.accounts[ch]; asked && a.capped && v > a.free {
			return &ExhaustedError{Channel: ch, Requested: v, Free: a.free}
		}
		return nil
	}
	for _, ch := range [...]string{ChannelTokens, ChannelIterations} {
		if err := fits(ch); err != nil {
			return nil, err
		}
	}
	if req[ChannelUSD] > 0 && !usd.capped {
		return nil, ErrUSDUnbudgeted
	}
	if err := fits(ChannelUSD); err != nil {
		return nil, err
	}
	resources := make([]string, 0, 8)
	for ch := range req {
		if ch != ChannelTokens && ch != ChannelIterations && ch != ChannelUSD {
			resources = append(resources, ch)
		}
	}
	slices.Sort(resources)
	for _, ch := range resources {
		if err := fits(ch); err != nil {
			return nil, err
		}
	}
	for ch, v := range req {
		a := p.accounts[ch]
		a.free -= v
		a.reserved += v
	}
	p.next++
	id := "t" + strconv.Itoa(p.next)
	p.tickets[id] = req
	return &Ticket{ID: id, Reserved: maps.Clone(req)}, nil
}

// Settle closes ticket t with what was actually spent: known spend is
// committed and the rest of the reservation returns to free. Spend beyond
// the reservation is committed too and recorded as a Violation. A channel
// whose spend is unknown is charged the whole reservation and marked
// unknown (the balance becomes a ceiling); unknown dollars under a dollar
// ceiling also taint the dollar channel, refusing later reservations,
// whether or not the ticket reserved dollars. The ticket is closed even
// when Settle returns an error.
func (p *Pool) Settle(t *Ticket, spent Spend) error {
	if t == nil {
		return ErrTicket
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	req, ok := p.tickets[t.ID]
	if !ok {
		return ErrTicket
	}
	delete(p.tickets, t.ID)
	actual := spendByChannel(spent)
	var invalid error
	for ch, reserved := range req {
		a := p.accounts[ch]
		v, measured := actual[ch]
		if measured && v != nil && (*v < 0 || *v > MaxQuantity || a.committed > accountLimit-*v) {
			invalid = fmt.Errorf("%w: %s spend %d is negative, above %d or past the channel's sum", ErrInvalid, ch, *v, MaxQuantity)
			v = nil
		}
		a.reserved -= reserved
		if !measured || v == nil {
			// Unknown: charge the whole reservation, or the floor
			// known to have been spent when that is more; never mint.
			charge := reserved
			if f := spent.floor(); ch == ChannelTokens && f > reserved && a.committed <= accountLimit-f {
				charge = f
				a.free -= f - reserved
			}
			a.committed += charge
			a.known = false
			if ch == ChannelUSD && a.capped {
				p.usdTainted = true
			}
			continue
		}
		a.committed += *v
		a.free += reserved - *v
		if *v > reserved {
			p.violations = append(p.violations, Violation{Ticket: t.ID, Channel: ch, Reserved: reserved, Spent: *v, Overspent: *v - reserved})
		}
	}
	// Spend on channels the ticket did not reserve is observed spend.
	// Dollars are the exception to observe's rule: a child that declared
	// no dollar ceiling still spends the root's dollars, so when it
	// reports none under a dollar ceiling the balance is no longer a
	// bound and the channel is tainted, as for a child that declared one
	// (spec §6 reconcile: unknown usd under a usd cap).
	for ch, v := range actual {
		if _, ok := req[ch]; ok {
			continue
		}
		if ch == ChannelUSD && v == nil {
			if a := p.accounts[ch]; a != nil && a.capped {
				p.usdTainted = true
			}
		}
		p.observeLocked(ch, v)
	}
	return invalid
}

// spendByChannel maps s onto the pool's channels. Every fixed channel is
// present, nil when unreported: a spend that names no dollars makes the
// dollar balance unknown rather than leaving an unreported cost read as
// a known $0.
func spendByChannel(s Spend) map[string]*int64 {
	out := map[string]*int64{ChannelTokens: s.Tokens, ChannelIterations: s.Iterations, ChannelUSD: s.MicroUSD}
	for name, v := range s.Resources {
		out[resourceChannel(name)] = v
	}
	return out
}

// Observe debits spend the pool did not reserve (a driver's own model
// calls) directly from free to committed. Free may go negative; Observe
// never refuses, because the spend already happened. Unknown quantities
// (dollars included: a spend that names none reports them unknown) mark
// their channel unknown without tainting it, and so do invalid ones
// (negative, above MaxQuantity, or past what the channel can sum).
func (p *Pool) Observe(spent Spend) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for ch, v := range spendByChannel(spent) {
		if f := spent.floor(); ch == ChannelTokens && v == nil && f > 0 {
			// What is known to have been spent is debited; the
			// balance is still a ceiling.
			p.observeLocked(ch, &f)
			p.accounts[ch].known = false
			continue
		}
		p.observeLocked(ch, v)
	}
}

func (p *Pool) observeLocked(ch string, v *int64) {
	a, ok := p.accounts[ch]
	if !ok {
		a = &account{known: true}
		p.accounts[ch] = a
	}
	if v == nil {
		// The balance becomes a ceiling. Unreported dollars taint a
		// dollar ceiling only through Settle (spec §6 reconcile): observed
		// spend is the driver's own, which admission does not gate.
		a.known = false
		return
	}
	if *v < 0 || *v > MaxQuantity || a.committed > accountLimit-*v {
		// Not a spend to trust: the balance becomes a ceiling.
		a.known = false
		return
	}
	a.free -= *v
	a.committed += *v
}

// Balance is one channel's state.
type Balance struct {
	Total, Free, Reserved, Committed int64
	// Capped is false for a channel the root did not limit.
	Capped bool
	// Known is false once any spend on the channel went unreported: Free
	// is then an upper bound and Committed a floor.
	Known bool
}

// Readout is a consistent snapshot of every channel.
type Readout struct {
	Channels    map[string]Balance
	USDTainted  bool
	OpenTickets int
	Violations  []Violation
	Deadline    time.Time
}

// ErrNotConserved: a readout's channel breaks total = free + reserved +
// committed.
var ErrNotConserved = errors.New("ledger: a channel does not conserve")

// Conserved checks the pool's invariant on r: for every channel, total =
// free + reserved + committed (an uncapped channel's total is 0), and
// reserved and committed are never negative. It returns ErrNotConserved
// naming the first channel (in name order) that breaks it.
func (r Readout) Conserved() error {
	for _, ch := range slices.Sorted(maps.Keys(r.Channels)) {
		b := r.Channels[ch]
		if b.Reserved < 0 || b.Committed < 0 || b.Total != b.Free+b.Reserved+b.Committed {
			return fmt.Errorf("%w: %s total %d != free %d + reserved %d + committed %d", ErrNotConserved, ch, b.Total, b.Free, b.Reserved, b.Committed)
		}
	}
	return nil
}

// Readout returns the pool's state.
func (p *Pool) Readout() Readout {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := Readout{Channels: map[string]Balance{}, USDTainted: p.usdTainted, OpenTickets: len(p.tickets),
		Violations: slices.Clone(p.violations), Deadline: p.deadline}
	for ch, a := range p.accounts {
		r.Channels[ch] = Balance{Total: a.total, Free: a.free, Reserved: a.reserved, Committed: a.committed, Capped: a.capped, Known: a.known}
	}
	return r
}

// OpenTickets returns the ids of reservations not yet settled: leaks at a
// join barrier, to be reported (they make every total a floor).
func (p *Pool) OpenTickets() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Sorted(maps.Keys(p.tickets))
}

// Snapshot is a pool's durable state.
type Snapshot struct {
	Channels   map[string]Balance
	Open       map[string]map[string]int64
	USDTainted bool
	Deadline   time.Time
	Violations []Violation
}

// Snapshot returns the state to persist.
func (p *Pool) Snapshot() Snapshot {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := Snapshot{Channels: map[string]Balance{}, Open: map[string]map[string]int64{}, USDTainted: p.usdTainted,
		Deadline: p.deadline, Violations: slices.Clone(p.violations)}
	for ch, a := range p.accounts {
		s.Channels[ch] = Balance{Total: a.total, Free: a.free, Reserved: a.reserved, Committed: a.committed, Capped: a.capped, Known: a.known}
	}
	for id, req := range p.tickets {
		s.Open[id] = maps.Clone(req)
	}
	return s
}

// Restore rebuilds a pool after a restart. Reservations that were open
// when the snapshot was taken belonged to work that may have spent
// anything up to its ceiling, so each is charged in full (committed), and
// its channels are marked unknown: a restart never mints capacity. Under
// a dollar ceiling any open reservation, dollars reserved or not, taints
// the dollar channel. The deadline stays absolute.
func Restore(s Snapshot, opts PoolOptions) (*Pool, error) {
	p := &Pool{accounts: map[string]*account{}, tickets: map[string]map[string]int64{}, deadline: s.Deadline,
		usdTainted: s.USDTainted, violations: slices.Clone(s.Violations), now: opts.Now}
	if p.now == nil {
		p.now = time.Now
	}
	for ch, b := range s.Channels {
		if b.Total < 0 || b.Total > MaxQuantity || b.Reserved < 0 || b.Reserved > accountLimit || b.Committed < 0 || b.Committed > accountLimit {
			return nil, fmt.Errorf("%w: snapshot channel %s holds a quantity out of range", ErrInvalid, ch)
		}
		if b.Total != b.Free+b.Reserved+b.Committed {
			return nil, fmt.Errorf("%w: snapshot channel %s does not conserve (%d != %d + %d + %d)", ErrInvalid, ch, b.Total, b.Free, b.Reserved, b.Committed)
		}
		p.accounts[ch] = &account{total: b.Total, free: b.Free, reserved: b.Reserved, committed: b.Committed, capped: b.Capped, known: b.Known}
	}
	for id, req := range s.Open {
		// Work that may have run spent dollars whether or not it
		// reserved any: under a dollar ceiling the balance is no
		// longer a bound.
		if a := p.accounts[ChannelUSD]; a != nil && a.capped {
			p.usdTainted = true
			a.known = false
		}
		for ch, v := range req {
			a, ok := p.accounts[ch]
			if !ok {
				return nil, fmt.Errorf("%w: open ticket %s names unknown channel %s", ErrInvalid, id, ch)
			}
			a.reserved -= v
			a.committed += v
			a.known = false
			if ch == ChannelUSD && a.capped {
				p.usdTainted = true
			}
		}
	}
	for ch, a := range p.accounts {
		if a.reserved != 0 {
			return nil, fmt.Errorf("%w: snapshot channel %s has reservations no open ticket explains", ErrInvalid, ch)
		}
	}
	return p, nil
}
