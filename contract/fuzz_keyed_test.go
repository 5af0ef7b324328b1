package contract_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/profile"
)

// storedOutcome is a KeyRecordStore whose key was bound by an earlier
// process (same digest) and whose outcome record holds whatever bytes
// the store returns — a corrupted or hostile row included.
type storedOutcome struct{ result canonjson.Value }

func (s storedOutcome) ClaimKey(_ context.Context, scope, _, digest string, _ canonjson.Value) (contract.KeyRecord, bool, error) {
	if strings.HasSuffix(scope, "/outcome") {
		return contract.KeyRecord{Digest: digest, Result: s.result}, false, nil
	}
	return contract.KeyRecord{Digest: digest, Result: canonjson.NullValue()}, false, nil
}

func (storedOutcome) ReleaseKey(context.Context, string, ...string) error { return nil }

// FuzzKeyedCreateStoredOutcome: whatever a key's stored outcome record
// holds, a durable keyed create never panics and never creates: it
// replays the environment an id names (found), or fails with one of the
// durable refusals — ErrKeyedEnvironmentGone, ErrCreateInDoubt,
// ErrKeyStore (a malformed record).
func FuzzKeyedCreateStoredOutcome(f *testing.F) {
	for _, seed := range []string{
		`{"environmentId":"env-1"}`, `{"environmentId":"gone"}`, `{"inDoubt":true}`,
		`{"environmentId":"env-1","inDoubt":true}`, `{}`, `null`, `[]`, `"env-1"`, `{"environmentId":7}`,
		`{"environmentId":"env-1","extra":1}`, `{"inDoubt":false}`,
	} {
		f.Add([]byte(seed))
	}
	key := "fuzz-key"
	prof := &profile.Profile{Name: profile.Ptr("fuzz")}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := canonjson.Decode(data)
		if err != nil {
			t.Skip()
		}
		k := new(contract.KeyedCreate[string])
		if err := k.Persist(contract.DurableKeys[string]{Store: storedOutcome{v}, Scope: "fuzz",
			ID:   func(e string) string { return e },
			Find: func(_ context.Context, id string) (string, bool, error) { return id, id == "env-1", nil },
		}); err != nil {
			t.Fatal(err)
		}
		env, c, err := k.Do(context.Background(), &contract.CreateInput{Profile: profile.Ref{Inline: prof}, IdempotencyKey: &key},
			func(context.Context, *contract.CreateInput) (string, error) {
				t.Fatal("a key bound by an earlier process was created again")
				return "", nil
			})
		switch {
		case err == nil:
			if env != "env-1" || c != contract.CreationReplayed {
				t.Fatalf("%q, %v; want env-1 replayed", env, c)
			}
		case errors.Is(err, contract.ErrKeyedEnvironmentGone), errors.Is(err, contract.ErrCreateInDoubt), errors.Is(err, contract.ErrKeyStore):
		default:
			t.Fatalf("untyped failure %v for stored outcome %s", err, data)
		}
	})
}
