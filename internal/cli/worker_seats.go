package cli

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
)

// workerSeatAccounts resolves the seat stages of any worker profile of a
// supervised or graph run (--seats) from one seats file: a stage is the
// file's "stages" entry of its index or the "accounts" entry its seat
// selector names, as for agentrt run --seats. Stages that resolve to the
// same configuration share one provider, so a session one stage left can
// be continued by the next. It never sees a credential (RG-10).
type workerSeatAccounts struct {
	a      *seatAccounts
	mu     sync.Mutex
	opened map[seatProvider]contract.Provider
}

// ProviderFor implements kernel.AccountManager.
func (m *workerSeatAccounts) ProviderFor(_ context.Context, stage int, seat profile.Seat) (contract.Provider, error) {
	cfg, where, ok := m.a.lookup(stage, seat)
	if !ok {
		return nil, fmt.Errorf("the --seats file names no provider for stage %d (%s on %s)", stage, seat.Model, seat.Provider)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if p, ok := m.opened[cfg]; ok {
		return p, nil
	}
	p, err := m.a.open(cfg, where)
	if err != nil {
		return nil, err
	}
	m.opened[cfg] = p
	return p, nil
}

var _ kernel.AccountManager = (*workerSeatAccounts)(nil)

// openWorkerSeats reads the --seats file of a supervised or graph run
// and resolves every stage of every worker profile with seats before the
// run starts (PRF-07): a stage the file cannot serve, a key variable that
// is unset or a binary that is missing is refused before anything is
// spent. profiles are the run's worker profiles by name (or node id).
func openWorkerSeats(stdio IO, path string, profiles map[string]*profile.Profile) (kernel.AccountManager, error) {
	a, err := loadSeatAccounts(stdio, path)
	if err != nil {
		return nil, err
	}
	m := &workerSeatAccounts{a: a, opened: map[seatProvider]contract.Provider{}}
	seated := 0
	for _, name := range slices.Sorted(maps.Keys(profiles)) {
		p := profiles[name]
		for k, seat := range p.Seats {
			if _, err := m.ProviderFor(context.Background(), k, seat); err != nil {
				return nil, usage("--seats: worker %q, stage %d: %v", name, k, err)
			}
		}
		if len(p.Seats) > 0 {
			seated++
		}
	}
	if seated == 0 {
		return nil, usage("--seats: no worker profile has seats; run without --seats")
	}
	return m, nil
}
