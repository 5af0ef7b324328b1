package contract_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/schema"
)

func envParseCreate(t *testing.T, doc string) *contract.CreateInput {
	t.Helper()
	in, err := contract.ParseCreateInput([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func envDigest(t *testing.T, in *contract.CreateInput) string {
	t.Helper()
	d, err := contract.CreateInputDigest(in)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestCreateInputDigest(t *testing.T) {
	// B.3: the digest of {kind: "agent-environment-create.v1", input}
	// (computed independently from the canonical JSON text).
	base := envParseCreate(t, `{"profile":"catalog-profile","name":"env-a","env":{"B":"2","A":"1"},"idempotencyKey":"k-1"}`)
	if got := envDigest(t, base); got != "sha256:098d7be10b02b489903e0d9f802883c61dd976bb317244a8d0a66e5fa4b203cc" {
		t.Fatalf("digest %s", got)
	}
	// ENV-09: the key is not part of the identity; member order never is.
	otherKey := envParseCreate(t, `{"idempotencyKey":"k-2","env":{"A":"1","B":"2"},"name":"env-a","profile":"catalog-profile"}`)
	unkeyed := envParseCreate(t, `{"profile":"catalog-profile","name":"env-a","env":{"A":"1","B":"2"}}`)
	if envDigest(t, otherKey) != envDigest(t, base) || envDigest(t, unkeyed) != envDigest(t, base) {
		t.Fatal("ENV-09: the key or member order changed the create identity")
	}

	full := `{"profile":{"name":"p","harness":"codex"},"requestedId":"env-fixed","backend":"codex",
		"workspace":{"snapshot":` + envSnapshotJSON + `,"cwd":{"base":"repository","path":"src"}},
		"resources":{"cpu":2,"memoryMb":4096},"env":{"A":"1"},"secrets":["GITHUB_TOKEN"],
		"egress":{"mode":"strict","allowDomains":["api.example.com","cdn.example.com"]},"billingOwner":"acct-1",
		"metadata":{"owner":"me"},"name":"n","runtimeAttachments":{"mcp":{"tools":{"command":"mcp-tools"}}},
		"providerOptions":{"region":"eu"},"idempotencyKey":"k"}`
	ref := envDigest(t, envParseCreate(t, full))
	// Every other field is part of the identity (ENV-11, ENV-14, ENV-16,
	// WSP-17).
	for _, tc := range []struct{ id, name, from, to string }{
		{"ENV-14", "requestedId", `"env-fixed"`, `"env-other"`},
		{"ENV-11", "env value", `"env":{"A":"1"}`, `"env":{"A":"2"}`},
		{"ENV-16", "egress domain order", `["api.example.com","cdn.example.com"]`, `["cdn.example.com","api.example.com"]`},
		{"WSP-17", "archive hash", `"sha256":"` + envD2 + `"`, `"sha256":"` + envD3 + `"`},
		{"ENV-11", "attachment", `"mcp-tools"`, `"mcp-tools2"`},
		{"ENV-11", "secrets form", `["GITHUB_TOKEN"]`, `{"GITHUB_TOKEN":"x"}`},
		{"ENV-11", "inline profile", `"harness":"codex"`, `"harness":"claude-code"`},
		{"ENV-11", "billing owner", `"acct-1"`, `"acct-2"`},
	} {
		changed := strings.Replace(full, tc.from, tc.to, 1)
		if changed == full {
			t.Fatalf("%s: fixture did not change", tc.name)
		}
		if envDigest(t, envParseCreate(t, changed)) == ref {
			t.Errorf("%s: changing the %s kept the create identity", tc.id, tc.name)
		}
	}

	// An invalid input has no identity.
	bad := &contract.CreateInput{}
	bad.Profile.CatalogID = " padded"
	_, err := contract.CreateInputDigest(bad)
	envWantIssue(t, err, "/profile")
	if _, err := contract.CreateInputDigest(nil); !errors.Is(err, contract.ErrCreateInput) {
		t.Fatalf("nil input: %v", err)
	}
}

func TestCreateInputSchema(t *testing.T) {
	for _, tc := range []struct{ id, name, doc, path string }{
		{"ENV-13", "unknown member", `{"profile":"p","signal":{}}`, ""},
		{"ENV-08", "profile missing", `{"name":"n"}`, "/profile"},
		{"ENV-08", "blank key", `{"profile":"p","idempotencyKey":""}`, "/idempotencyKey"},
		{"ENV-14", "padded requestedId", `{"profile":"p","requestedId":"x "}`, "/requestedId"},
		{"ENV-16", "padded domain", `{"profile":"p","egress":{"mode":"strict","allowDomains":[" a.com"]}}`, "/egress/allowDomains/0"},
		{"ENV-16", "domains on open", `{"profile":"p","egress":{"mode":"open","allowDomains":["a.com"]}}`, "/egress"},
		{"ENV-16", "unknown mode", `{"profile":"p","egress":{"mode":"proxy"}}`, "/egress/mode"},
		{"ENV-17", "resources unknown member", `{"profile":"p","resources":{"ram":1}}`, "/resources"},
		{"WSP-18", "snapshot with repoUrl", `{"profile":"p","workspace":{"snapshot":` + envSnapshotJSON + `,"repoUrl":"r"}}`, "/workspace/snapshot"},
		{"ENV-11", "env value not string", `{"profile":"p","env":{"A":1}}`, "/env/A"},
		{"ENV-11", "secrets of numbers", `{"profile":"p","secrets":[1]}`, "/secrets"},
		{"ENV-11", "attachment alias padded", `{"profile":"p","runtimeAttachments":{"mcp":{" a":{"command":"x"}}}}`, "/runtimeAttachments/mcp/ a"},
		{"ENV-11", "attachment unknown member", `{"profile":"p","runtimeAttachments":{"mcp":{},"hooks":{}}}`, "/runtimeAttachments"},
		{"ENV-11", "attachment server invalid", `{"profile":"p","runtimeAttachments":{"mcp":{"a":{"command":"rm -rf /"}}}}`, "/runtimeAttachments/mcp/a/command"},
	} {
		t.Run(tc.id+" "+tc.name, func(t *testing.T) {
			_, err := contract.ParseCreateInput([]byte(tc.doc))
			envWantIssue(t, err, tc.path)
		})
	}
	// Strict egress without a list and both secret forms are accepted.
	for _, doc := range []string{
		`{"profile":"p","egress":{"mode":"strict"}}`,
		`{"profile":"p","egress":{"mode":"blocked"},"secrets":{"A":"b"}}`,
		`{"profile":"p","secrets":[]}`,
	} {
		in := envParseCreate(t, doc)
		v, _ := canonjson.ToValue(in)
		want, _ := canonjson.Decode([]byte(doc))
		if !canonjson.Equal(v, want) {
			t.Fatalf("round trip %s: %s", doc, canonjson.Marshal(v))
		}
	}
}

func TestEgressAndAttachments(t *testing.T) {
	p, err := contract.ParseEgressPolicy([]byte(`{"mode":"strict","allowDomains":["api.example.com"]}`))
	if err != nil || p.Mode != contract.EgressStrict || len(p.AllowDomains) != 1 {
		t.Fatalf("%+v %v", p, err)
	}
	a, err := contract.ParseRuntimeAttachments([]byte(`{"mcp":{"docs":{"url":"https://mcp.example.com/sse","transport":"sse"}}}`))
	if err != nil || a.MCP["docs"].URL == nil {
		t.Fatalf("%+v %v", a, err)
	}
	_, err = contract.ParseRuntimeAttachments([]byte(`{"mcp":{"x":{"url":"https://mcp.example.com/","enabled":true,"metadata":{"a":"` + strings.Repeat("b", contract.MaxStringLength+1) + `"}}}}`))
	envWantIssue(t, err, "")
}

func TestCreation(t *testing.T) {
	// ENV-03..ENV-05: two verdicts; absence is unknown, never created.
	for _, c := range []contract.Creation{contract.CreationCreated, contract.CreationReplayed} {
		got, err := contract.ParseCreation([]byte(`"` + string(c) + `"`))
		if err != nil || got != c || !c.Known() {
			t.Fatalf("%q: %q %v", c, got, err)
		}
	}
	if contract.Creation("").Known() {
		t.Fatal("an absent verdict is known")
	}
	if _, err := contract.ParseCreation([]byte(`"CREATED"`)); err == nil {
		t.Fatal("a verdict is case sensitive")
	}
}

type envFakeEnv struct{ id string }

func TestKeyedCreate(t *testing.T) {
	ctx := context.Background()
	var effects atomic.Int32
	create := func(_ context.Context, in *contract.CreateInput) (*envFakeEnv, error) {
		n := effects.Add(1)
		return &envFakeEnv{id: "env-" + string(rune('0'+n))}, nil
	}
	t.Run("ENV-08 unkeyed creates every time", func(t *testing.T) {
		var k contract.KeyedCreate[*envFakeEnv]
		effects.Store(0)
		in := envParseCreate(t, `{"profile":"p"}`)
		for range 2 {
			_, c, err := k.Do(ctx, in, create)
			if err != nil || c != contract.CreationCreated {
				t.Fatal(c, err)
			}
		}
		if effects.Load() != 2 {
			t.Fatalf("effects %d", effects.Load())
		}
	})
	t.Run("ENV-03 ENV-04 ENV-10 replay", func(t *testing.T) {
		var k contract.KeyedCreate[*envFakeEnv]
		effects.Store(0)
		first, c1, err := k.Do(ctx, envParseCreate(t, `{"profile":"p","name":"a","idempotencyKey":"k"}`), create)
		if err != nil || c1 != contract.CreationCreated {
			t.Fatal(c1, err)
		}
		// Field order reversed: the same canonical input.
		again, c2, err := k.Do(ctx, envParseCreate(t, `{"idempotencyKey":"k","name":"a","profile":"p"}`), create)
		if err != nil || c2 != contract.CreationReplayed || again != first {
			t.Fatal(c2, err)
		}
		if effects.Load() != 1 {
			t.Fatalf("effects %d", effects.Load())
		}
	})
	t.Run("ENV-11 changed input conflicts before any effect", func(t *testing.T) {
		var k contract.KeyedCreate[*envFakeEnv]
		effects.Store(0)
		if _, _, err := k.Do(ctx, envParseCreate(t, `{"profile":"p","name":"a","idempotencyKey":"k"}`), create); err != nil {
			t.Fatal(err)
		}
		_, _, err := k.Do(ctx, envParseCreate(t, `{"profile":"p","name":"b","idempotencyKey":"k"}`), create)
		if !errors.Is(err, contract.ErrIdempotencyConflict) {
			t.Fatalf("err %v", err)
		}
		if effects.Load() != 1 {
			t.Fatalf("effects %d", effects.Load())
		}
		// Another key with the same input is another operation.
		if _, c, err := k.Do(ctx, envParseCreate(t, `{"profile":"p","name":"b","idempotencyKey":"k2"}`), create); err != nil || c != contract.CreationCreated {
			t.Fatal(c, err)
		}
	})
	t.Run("ENV-08 concurrent callers coalesce", func(t *testing.T) {
		var k contract.KeyedCreate[*envFakeEnv]
		effects.Store(0)
		release := make(chan struct{})
		slow := func(ctx context.Context, in *contract.CreateInput) (*envFakeEnv, error) {
			<-release
			return create(ctx, in)
		}
		var wg sync.WaitGroup
		var created, replayed atomic.Int32
		envs := make([]*envFakeEnv, 16)
		for i := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				e, c, err := k.Do(ctx, envParseCreate(t, `{"profile":"p","idempotencyKey":"same"}`), slow)
				if err != nil {
					t.Error(err)
					return
				}
				envs[i] = e
				switch c {
				case contract.CreationCreated:
					created.Add(1)
				case contract.CreationReplayed:
					replayed.Add(1)
				default:
					t.Errorf("verdict %q", c)
				}
			}()
		}
		close(release)
		wg.Wait()
		if effects.Load() != 1 || created.Load() != 1 || replayed.Load() != 15 {
			t.Fatalf("effects %d created %d replayed %d", effects.Load(), created.Load(), replayed.Load())
		}
		for _, e := range envs {
			if e != envs[0] {
				t.Fatal("callers received different environments")
			}
		}
	})
	t.Run("ENV-11 conflict while the first create is running", func(t *testing.T) {
		var k contract.KeyedCreate[*envFakeEnv]
		effects.Store(0)
		started, release := make(chan struct{}), make(chan struct{})
		done := make(chan error)
		go func() {
			_, _, err := k.Do(ctx, envParseCreate(t, `{"profile":"p","idempotencyKey":"k"}`), func(ctx context.Context, in *contract.CreateInput) (*envFakeEnv, error) {
				close(started)
				<-release
				return create(ctx, in)
			})
			done <- err
		}()
		<-started
		if _, _, err := k.Do(ctx, envParseCreate(t, `{"profile":"q","idempotencyKey":"k"}`), create); !errors.Is(err, contract.ErrIdempotencyConflict) {
			t.Fatalf("err %v", err)
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if effects.Load() != 1 {
			t.Fatalf("effects %d", effects.Load())
		}
	})
	t.Run("B.2 a failed create leaves the key reusable", func(t *testing.T) {
		var k contract.KeyedCreate[*envFakeEnv]
		effects.Store(0)
		boom := errors.New("platform refused")
		in := envParseCreate(t, `{"profile":"p","idempotencyKey":"k"}`)
		_, _, err := k.Do(ctx, in, func(context.Context, *contract.CreateInput) (*envFakeEnv, error) { return nil, boom })
		if !errors.Is(err, boom) {
			t.Fatal(err)
		}
		if _, c, err := k.Do(ctx, in, create); err != nil || c != contract.CreationCreated || effects.Load() != 1 {
			t.Fatal(c, err, effects.Load())
		}
	})
	t.Run("waiters see the failure", func(t *testing.T) {
		var k contract.KeyedCreate[*envFakeEnv]
		boom := errors.New("platform refused")
		started, release := make(chan struct{}), make(chan struct{})
		go func() {
			_, _, _ = k.Do(ctx, envParseCreate(t, `{"profile":"p","idempotencyKey":"k"}`), func(context.Context, *contract.CreateInput) (*envFakeEnv, error) {
				close(started)
				<-release
				return nil, boom
			})
		}()
		<-started
		waited := make(chan error)
		go func() {
			_, _, err := k.Do(ctx, envParseCreate(t, `{"profile":"p","idempotencyKey":"k"}`), create)
			waited <- err
		}()
		close(release)
		if err := <-waited; err != nil && !errors.Is(err, boom) {
			t.Fatalf("waiter: %v", err)
		}
	})
	t.Run("the callback gets a detached canonical copy", func(t *testing.T) {
		var k contract.KeyedCreate[*envFakeEnv]
		in := envParseCreate(t, `{"profile":"p","metadata":{"a":1},"idempotencyKey":"k"}`)
		_, _, err := k.Do(ctx, in, func(_ context.Context, got *contract.CreateInput) (*envFakeEnv, error) {
			if got == in || *got.IdempotencyKey != "k" {
				t.Error("the callback received the caller's value or lost the key")
			}
			got.Metadata["a"] = canonjson.NumberValue(2)
			return &envFakeEnv{}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if in.Metadata["a"].Float() != 1 {
			t.Fatal("the callback's copy shares the caller's metadata")
		}
	})
	t.Run("an invalid keyed input has no effect", func(t *testing.T) {
		var k contract.KeyedCreate[*envFakeEnv]
		effects.Store(0)
		key := "k"
		in := &contract.CreateInput{IdempotencyKey: &key, Egress: &contract.EgressPolicy{Mode: "proxy"}}
		in.Profile.CatalogID = "p"
		_, _, err := k.Do(ctx, in, create)
		var se *schema.Error
		if !errors.As(err, &se) || effects.Load() != 0 {
			t.Fatalf("err %v effects %d", err, effects.Load())
		}
	})
	t.Run("a cancelled context has no effect", func(t *testing.T) {
		var k contract.KeyedCreate[*envFakeEnv]
		effects.Store(0)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, _, err := k.Do(cctx, envParseCreate(t, `{"profile":"p","idempotencyKey":"k"}`), create); !errors.Is(err, context.Canceled) || effects.Load() != 0 {
			t.Fatal(err, effects.Load())
		}
	})
	t.Run("Forget lets a destroyed environment's key create again", func(t *testing.T) {
		var k contract.KeyedCreate[*envFakeEnv]
		effects.Store(0)
		in := envParseCreate(t, `{"profile":"p","idempotencyKey":"k"}`)
		_, _, _ = k.Do(ctx, in, create)
		k.Forget("k")
		if _, c, err := k.Do(ctx, in, create); err != nil || c != contract.CreationCreated || effects.Load() != 2 {
			t.Fatal(c, err, effects.Load())
		}
	})
	t.Run("a panicking create releases the key", func(t *testing.T) {
		var k contract.KeyedCreate[*envFakeEnv]
		in := envParseCreate(t, `{"profile":"p","idempotencyKey":"k"}`)
		func() {
			defer func() { _ = recover() }()
			_, _, _ = k.Do(ctx, in, func(context.Context, *contract.CreateInput) (*envFakeEnv, error) { panic("boom") })
		}()
		if _, c, err := k.Do(ctx, in, create); err != nil || c != contract.CreationCreated {
			t.Fatal(c, err)
		}
	})
}
