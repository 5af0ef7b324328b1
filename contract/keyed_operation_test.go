package contract_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentrt/agentrt/contract"
)

// KeyedOperation runs one effect per key and digest, replays it, refuses
// another digest before any effect, and with Max forgets the oldest key.
func TestKeyedOperation(t *testing.T) {
	ctx := context.Background()
	k := contract.KeyedOperation[int]{Max: 2}
	effects := 0
	op := func(context.Context) (int, error) { effects++; return effects, nil }
	for _, tc := range []struct {
		key, digest string
		want        int
		creation    contract.Creation
		conflict    bool
	}{
		{"a", "d1", 1, contract.CreationCreated, false},
		{"a", "d1", 1, contract.CreationReplayed, false},
		{"a", "d2", 0, "", true},
		{"b", "d1", 2, contract.CreationCreated, false},
		{"c", "d1", 3, contract.CreationCreated, false}, // a is forgotten (Max 2)
		{"a", "d1", 4, contract.CreationCreated, false},
		{"c", "d1", 3, contract.CreationReplayed, false},
	} {
		got, creation, err := k.Do(ctx, tc.key, tc.digest, op)
		if tc.conflict {
			if !errors.Is(err, contract.ErrIdempotencyConflict) {
				t.Errorf("%s/%s: %v, want an idempotency conflict", tc.key, tc.digest, err)
			}
			continue
		}
		if err != nil || got != tc.want || creation != tc.creation {
			t.Errorf("%s/%s: %d %q %v, want %d %q", tc.key, tc.digest, got, creation, err, tc.want, tc.creation)
		}
	}
}
