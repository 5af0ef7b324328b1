package store_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/postgres"
	"github.com/agentrt/agentrt/store/sqlite"
)

// keyedEnv is an environment of keyedProvider.
type keyedEnv struct{ id string }

// keyedProvider stands for a provider whose environments outlive the
// adapter's process (a service): it counts its creates and finds an
// environment by id until it is removed.
type keyedProvider struct {
	mu      sync.Mutex
	envs    map[string]*keyedEnv
	creates int
}

func (p *keyedProvider) create(context.Context, *contract.CreateInput) (*keyedEnv, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.creates++
	env := &keyedEnv{id: fmt.Sprintf("env-%d", p.creates)}
	if p.envs == nil {
		p.envs = map[string]*keyedEnv{}
	}
	p.envs[env.id] = env
	return env, nil
}

func (p *keyedProvider) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.creates
}

func (p *keyedProvider) remove(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.envs, id)
}

// adapter is one process's provider adapter over p, its keys in st.
func (p *keyedProvider) adapter(t testing.TB, st store.Store) *contract.KeyedCreate[*keyedEnv] {
	t.Helper()
	k := new(contract.KeyedCreate[*keyedEnv])
	if err := k.Persist(contract.DurableKeys[*keyedEnv]{Store: store.KeyRecords(st), Scope: "keyed-test",
		ID: func(e *keyedEnv) string { return e.id },
		Find: func(_ context.Context, id string) (*keyedEnv, bool, error) {
			p.mu.Lock()
			defer p.mu.Unlock()
			e, ok := p.envs[id]
			return e, ok, nil
		},
	}); err != nil {
		t.Fatal(err)
	}
	return k
}

func keyedInput(t testing.TB, key, name string) *contract.CreateInput {
	t.Helper()
	prof, err := profile.Parse([]byte(`{"name":"` + name + `","harness":"cli-base","model":{"provider":"scripted","default":"scripted/first"}}`))
	if err != nil {
		t.Fatal(err)
	}
	return &contract.CreateInput{Profile: profile.Ref{Inline: prof}, IdempotencyKey: &key}
}

// keyStores opens, again on every call, the same store of each kind: a
// process restart is closing one and opening the next.
func keyStores(t *testing.T) []struct {
	name string
	open func(t *testing.T) store.Store
} {
	dir := t.TempDir()
	return []struct {
		name string
		open func(t *testing.T) store.Store
	}{
		{"sqlite", func(t *testing.T) store.Store {
			s, err := sqlite.Open(context.Background(), filepath.Join(dir, "keys.db"), sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}},
		{"postgres", func() func(t *testing.T) store.Store {
			var url string
			return func(t *testing.T) store.Store {
				if url == "" {
					url = pgtest.Schema(t)
				}
				s, err := postgres.Open(context.Background(), url, postgres.Options{})
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
		}()},
	}
}

// ENV-10 across a restart: a keyed create's key survives its process
// when the adapter keeps it in the run store. After a restart the same
// key and input replay the same environment (no second create), a
// changed input under the key is a conflict before any effect, an
// environment the provider no longer holds is ErrKeyedEnvironmentGone,
// a create whose process died before its outcome was recorded is
// ErrCreateInDoubt — never a second environment — and a failed create
// releases its key for a retry.
func TestKeyedCreateSurvivesRestart(t *testing.T) {
	for _, tc := range keyStores(t) {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			p := &keyedProvider{}
			restart := func(fn func(k *contract.KeyedCreate[*keyedEnv])) {
				t.Helper()
				st := tc.open(t)
				defer st.Close()
				fn(p.adapter(t, st))
			}
			var first *keyedEnv
			restart(func(k *contract.KeyedCreate[*keyedEnv]) {
				env, c, err := k.Do(ctx, keyedInput(t, "k-1", "writer"), p.create)
				if err != nil || c != contract.CreationCreated {
					t.Fatalf("first create: %v, %v", c, err)
				}
				first = env
			})
			restart(func(k *contract.KeyedCreate[*keyedEnv]) {
				env, c, err := k.Do(ctx, keyedInput(t, "k-1", "writer"), p.create)
				if err != nil || c != contract.CreationReplayed || env != first {
					t.Fatalf("create after restart: %v, %v, %v; want %s replayed", env, c, err, first.id)
				}
				if _, _, err := k.Do(ctx, keyedInput(t, "k-1", "other"), p.create); !errors.Is(err, contract.ErrIdempotencyConflict) {
					t.Fatalf("changed input after restart: %v; want ErrIdempotencyConflict", err)
				}
			})
			if n := p.count(); n != 1 {
				t.Fatalf("%d creates; want 1", n)
			}

			p.remove(first.id)
			restart(func(k *contract.KeyedCreate[*keyedEnv]) {
				if _, _, err := k.Do(ctx, keyedInput(t, "k-1", "writer"), p.create); !errors.Is(err, contract.ErrKeyedEnvironmentGone) {
					t.Fatalf("create of a gone environment's key: %v; want ErrKeyedEnvironmentGone", err)
				}
			})

			boom := errors.New("the provider refused")
			restart(func(k *contract.KeyedCreate[*keyedEnv]) {
				_, _, err := k.Do(ctx, keyedInput(t, "k-fail", "writer"), func(context.Context, *contract.CreateInput) (*keyedEnv, error) { return nil, boom })
				if !errors.Is(err, boom) {
					t.Fatalf("failed create: %v", err)
				}
			})
			restart(func(k *contract.KeyedCreate[*keyedEnv]) {
				if _, c, err := k.Do(ctx, keyedInput(t, "k-fail", "writer"), p.create); err != nil || c != contract.CreationCreated {
					t.Fatalf("retry after a failed create: %v, %v; want created", c, err)
				}
			})

			// A process dies mid-create: its intent is recorded, its
			// outcome never is.
			restart(func(k *contract.KeyedCreate[*keyedEnv]) {
				func() {
					defer func() { _ = recover() }()
					_, _, _ = k.Do(ctx, keyedInput(t, "k-died", "writer"), func(context.Context, *contract.CreateInput) (*keyedEnv, error) {
						panic("the process died mid-create")
					})
				}()
			})
			before := p.count()
			restart(func(k *contract.KeyedCreate[*keyedEnv]) {
				if _, _, err := k.Do(ctx, keyedInput(t, "k-died", "writer"), p.create); !errors.Is(err, contract.ErrCreateInDoubt) {
					t.Fatalf("create after a death mid-create: %v; want ErrCreateInDoubt", err)
				}
			})
			if p.count() != before {
				t.Errorf("a create in doubt made an environment")
			}

			// Forget releases the key's records: the key creates again.
			restart(func(k *contract.KeyedCreate[*keyedEnv]) {
				k.Forget("k-1")
			})
			restart(func(k *contract.KeyedCreate[*keyedEnv]) {
				if _, c, err := k.Do(ctx, keyedInput(t, "k-1", "other"), p.create); err != nil || c != contract.CreationCreated {
					t.Fatalf("create after Forget: %v, %v; want created", c, err)
				}
			})
		})
	}
}

// Two processes race on one key: while the first is still creating, the
// second finds its intent without an outcome and declares the create in
// doubt (ErrCreateInDoubt, no environment of its own). The first's
// environment is then handed to nobody: it is undone, and its caller
// gets ErrCreateInDoubt too, so no environment lives on under the key
// without a record naming it. On SQLite and PostgreSQL.
func TestKeyedCreateInDoubtUndoesTheLateEnvironment(t *testing.T) {
	for _, tc := range keyStores(t) {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			p := &keyedProvider{}
			var mu sync.Mutex
			var undone []string
			adapter := func(st store.Store) *contract.KeyedCreate[*keyedEnv] {
				k := new(contract.KeyedCreate[*keyedEnv])
				if err := k.Persist(contract.DurableKeys[*keyedEnv]{Store: store.KeyRecords(st), Scope: "keyed-race",
					ID:   func(e *keyedEnv) string { return e.id },
					Find: func(context.Context, string) (*keyedEnv, bool, error) { return nil, false, nil },
					Undo: func(_ context.Context, e *keyedEnv) error {
						mu.Lock()
						defer mu.Unlock()
						undone = append(undone, e.id)
						return nil
					},
				}); err != nil {
					t.Fatal(err)
				}
				return k
			}
			first, second := tc.open(t), tc.open(t)
			defer first.Close()
			defer second.Close()
			creating, release := make(chan struct{}), make(chan struct{})
			done := make(chan error, 1)
			racing, in := adapter(first), keyedInput(t, "k-race", "writer")
			go func() {
				_, _, err := racing.Do(ctx, in, func(ctx context.Context, in *contract.CreateInput) (*keyedEnv, error) {
					close(creating)
					<-release
					return p.create(ctx, in)
				})
				done <- err
			}()
			<-creating
			if _, _, err := adapter(second).Do(ctx, keyedInput(t, "k-race", "writer"), p.create); !errors.Is(err, contract.ErrCreateInDoubt) {
				t.Fatalf("the second process: %v; want ErrCreateInDoubt", err)
			}
			close(release)
			if err := <-done; !errors.Is(err, contract.ErrCreateInDoubt) {
				t.Fatalf("the first process: %v; want ErrCreateInDoubt", err)
			}
			if p.count() != 1 || len(undone) != 1 || undone[0] != "env-1" {
				t.Errorf("%d creates, undone %v; want the one environment undone", p.count(), undone)
			}
		})
	}
}
