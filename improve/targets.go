package improve

import (
	"context"
	"fmt"
	"sync"
)

// Targets is what an activation writes: the live surfaces a caller owns.
// Base returns the digest a target holds now; Apply replaces it with
// digest (the candidate an activation puts in place, or the baseline a
// restore puts back) and returns the digest now in place.
type Targets interface {
	Base(ctx context.Context, surface, identity string) (string, error)
	Apply(ctx context.Context, surface, identity, digest string) (string, error)
}

// MemoryTargets is an in-memory Targets for tests: a map from surface and
// identity to the digest in place. Apply sets the digest it is given.
type MemoryTargets struct {
	mu      sync.Mutex
	digests map[[2]string]string
	applied int
}

// NewMemoryTargets returns empty targets.
func NewMemoryTargets() *MemoryTargets { return &MemoryTargets{digests: map[[2]string]string{}} }

// Set places digest at a target.
func (m *MemoryTargets) Set(surface, identity, digest string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.digests[[2]string{surface, identity}] = digest
}

// Applied counts Apply calls.
func (m *MemoryTargets) Applied() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.applied
}

// Base implements Targets; an unknown target is an error.
func (m *MemoryTargets) Base(_ context.Context, surface, identity string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.digests[[2]string{surface, identity}]
	if !ok {
		return "", fmt.Errorf("no target %s %q", surface, identity)
	}
	return d, nil
}

// Apply implements Targets.
func (m *MemoryTargets) Apply(_ context.Context, surface, identity, digest string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.applied++
	m.digests[[2]string{surface, identity}] = digest
	return digest, nil
}
