package sidecar_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract/wire"
	"github.com/agentrt/agentrt/sidecar"
	"github.com/agentrt/agentrt/store"
)

// Issue 14 (bounded records by count): beyond Options.MaxRecords the
// oldest keyed creates' records go first — each with its attempts and
// outcomes — but never those of an environment the provider still
// holds, however old; so does the incarnation record of an exact
// environment that is gone, never that of a live one. A retried create
// of a kept live environment replays it (no second environment); a
// flood of creates whose environments all live stays, whole. On SQLite
// and PostgreSQL stores.
func TestExpireBeyondKeepsLiveEnvironmentsRecords(t *testing.T) {
	forEachStore(t, testExpireBeyondKeepsLiveEnvironmentsRecords)
}

func testExpireBeyondKeepsLiveEnvironmentsRecords(t *testing.T, open func(t *testing.T) store.Store) {
	ctx := testCtx(t)
	st := open(t)
	// Long enough for a loaded database to answer a create's store calls
	// (they run under it), short enough to wait past twice.
	const createTimeout = time.Second
	h := newExactHost(t)
	ts, s := serve(t, h, sidecar.Options{Store: st, RecordRetention: -1, MaxRecords: 3, CreateTimeout: createTimeout})
	create := func(key string) (string, int) {
		t.Helper()
		status, body := do(t, ts, http.MethodPost, wire.PathEnvironments, `{"profile":{"name":"t"},"name":"env","idempotencyKey":"`+key+`"}`, nil)
		if status != http.StatusCreated && status != http.StatusOK {
			t.Fatalf("keyed create %s: %d %s", key, status, body)
		}
		res, err := wire.ParseCreateResult(body)
		if err != nil {
			t.Fatal(err)
		}
		return res.Environment.ID, status
	}
	keys := func(scope string) []string {
		t.Helper()
		recs, err := st.ListIdempotency(ctx, store.IdempotencyQuery{Scope: scope, Limit: store.MaxIdempotencyBatch})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range recs {
			out = append(out, r.Key)
		}
		slices.Sort(out)
		return out
	}

	// k0 and k1, the oldest, stay live; k2…k9 are destroyed.
	ids := map[string]string{}
	for i := range 10 {
		k := fmt.Sprintf("k%d", i)
		ids[k], _ = create(k)
		time.Sleep(2 * time.Millisecond) // distinct creation times: oldest first is well defined
	}
	for i := 2; i < 10; i++ {
		if status, body := do(t, ts, http.MethodDelete, "/v1/environments/"+ids[fmt.Sprintf("k%d", i)], "", nil); status != http.StatusOK && status != http.StatusNoContent {
			t.Fatalf("destroy k%d: %d %s", i, status, body)
		}
	}
	time.Sleep(2 * createTimeout) // every create is past the time it may still run
	n, err := s.ExpireBeyond(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"k0", "k1", "k9"}; n < 7 || !slices.Equal(keys("sidecar.create"), want) {
		t.Fatalf("after ExpireBeyond (%d deleted) the creates kept are %v, want %v: the bound of 3, the two live ones first", n, keys("sidecar.create"), want)
	}
	for _, scope := range []string{"sidecar.create.attempt", "sidecar.create.outcome"} {
		if got := keys(scope); !slices.Equal(got, []string{"k0#1", "k1#1", "k9#1"}) {
			t.Errorf("%s records after ExpireBeyond: %v, want only the kept creates'", scope, got)
		}
	}
	// The kept live environment's retried create replays it.
	if id, status := create("k0"); id != ids["k0"] || status != http.StatusOK {
		t.Errorf("retried create k0: %s (status %d), want the replay of %s", id, status, ids["k0"])
	}

	// Exact environments: the incarnation of a destroyed one goes beyond
	// the bound, a live one's stays.
	var exact []string
	for i := range 5 {
		body := strings.Replace(exactCreateBody, `"sidecar-exact"`, fmt.Sprintf(`"bound-exact-%d"`, i), 1)
		status, out := do(t, ts, http.MethodPost, wire.PathExactEnvironments, body, nil)
		if status != http.StatusOK {
			t.Fatalf("exact create %d: %d %s", i, status, out)
		}
		env, err := wire.ParseExactEnvironment(out)
		if err != nil {
			t.Fatal(err)
		}
		exact = append(exact, env.ID)
		time.Sleep(2 * time.Millisecond)
	}
	for _, id := range exact[1:4] {
		if status, out := do(t, ts, http.MethodDelete, "/v1/exact/environments/"+id, "", nil); status != http.StatusOK && status != http.StatusNoContent {
			t.Fatalf("exact destroy %s: %d %s", id, status, out)
		}
	}
	// A destroy forgets its incarnation already; records of environments
	// that went another way (the provider lost them) are the bound's.
	// Make two such, the newest: records naming environments that never
	// existed. With the two live ones that is one beyond the bound.
	ghosts := []string{`["ghost-exact-env-1"]`, `["ghost-exact-env-2"]`}
	for _, g := range ghosts {
		if _, _, err := st.ClaimIdempotency(ctx, store.Idempotency{Scope: "sidecar.exact.incarnation", Key: g, RequestDigest: "sha256:" + strings.Repeat("0", 64)}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	time.Sleep(2 * createTimeout)
	if _, err := s.ExpireBeyond(ctx); err != nil {
		t.Fatal(err)
	}
	kept := keys("sidecar.exact.incarnation")
	if len(kept) != 3 || slices.Contains(kept, ghosts[0]) || !slices.Contains(kept, ghosts[1]) {
		t.Errorf("incarnations kept: %v; want the bound of 3: the two live ones and the newest gone one", kept)
	}
	for _, id := range []string{exact[0], exact[4]} {
		if !slices.ContainsFunc(kept, func(k string) bool { return strings.Contains(k, `"`+id+`"`) }) {
			t.Errorf("the incarnation of live exact environment %s was expired: %v", id, kept)
		}
	}

	// A flood whose environments all live is kept whole, beyond the
	// bound: only the one gone environment's create (k9) goes.
	for i := range 5 {
		create(fmt.Sprintf("flood-%d", i))
	}
	time.Sleep(2 * createTimeout)
	if _, err := s.ExpireBeyond(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := keys("sidecar.create"), []string{"flood-0", "flood-1", "flood-2", "flood-3", "flood-4", "k0", "k1"}; !slices.Equal(got, want) {
		t.Errorf("after a flood of live creates the creates kept are %v, want every live one %v", got, want)
	}
}
