package contract_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/schema"
)

// exactFakeProvider is a provider whose document and exact-process offer
// a test sets independently.
type exactFakeProvider struct {
	declare bool
}

func (exactFakeProvider) Name() string { return "fake" }
func (p exactFakeProvider) Capabilities(context.Context) (*contract.Capabilities, error) {
	c := &contract.Capabilities{}
	if p.declare {
		c.ExactProcess = &contract.ExactProcessCapabilities{Egress: []contract.EgressMode{contract.EgressBlocked}}
	}
	return c, nil
}
func (exactFakeProvider) Create(context.Context, *contract.CreateInput) (contract.Environment, error) {
	return nil, errors.New("no agent environments")
}

// exactFakeFacet is a facet that is never called.
type exactFakeFacet struct{ contract.ExactProcessProvider }

// exactHost offers facet (which may be nil, or a typed nil).
type exactHost struct {
	exactFakeProvider
	facet contract.ExactProcessProvider
}

func (h exactHost) ExactProcess() contract.ExactProcessProvider { return h.facet }

// CAP-13, EXP-13: the exact-process facet is offered exactly when the
// document declares exactProcess; a liar fails in both directions, and a
// typed nil facet is no offer.
func TestExactProcessExposure(t *testing.T) {
	var typedNil *exactFakeFacet
	for _, tc := range []struct {
		name    string
		p       contract.Provider
		wantErr bool
	}{
		{"neither declared nor offered", exactFakeProvider{}, false},
		{"declared and offered", exactHost{exactFakeProvider{declare: true}, exactFakeFacet{}}, false},
		{"declared, not implemented", exactFakeProvider{declare: true}, true},
		{"declared, accessor returns nil", exactHost{exactFakeProvider{declare: true}, nil}, true},
		{"declared, accessor returns a typed nil", exactHost{exactFakeProvider{declare: true}, typedNil}, true},
		{"offered, not declared", exactHost{exactFakeProvider{}, exactFakeFacet{}}, true},
		{"accessor returns nil, not declared", exactHost{exactFakeProvider{}, nil}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := tc.p.Capabilities(context.Background())
			err := contract.CheckProviderExposure(c, tc.p)
			if (err != nil) != tc.wantErr {
				t.Fatalf("CheckProviderExposure = %v, want error %v", err, tc.wantErr)
			}
			var ee *contract.ExposureError
			if err != nil && (!errors.As(err, &ee) || ee.Ability != "ExactProcessHost" || ee.Gate != "exactProcess" || ee.Declared != (c.ExactProcess != nil)) {
				t.Errorf("the refusal does not name the exact-process facet: %v", err)
			}
		})
	}
}

func TestPosixFileMode(t *testing.T) {
	for _, tc := range []struct {
		mode fs.FileMode
		want uint32
		ok   bool
	}{
		{0, 0, true},
		{0o640, 0o640, true},
		{fs.ModePerm, 0o777, true},
		{fs.ModeSetuid | 0o755, 0o4755, true},
		{fs.ModeSetgid | fs.ModeSticky | 0o700, 0o3700, true},
		{0o4755, 0, false}, // a raw setuid bit is not fs.ModeSetuid
		{fs.ModeDir | 0o755, 0, false},
		{fs.ModeSymlink, 0, false},
	} {
		got, err := contract.PosixFileMode(tc.mode)
		if tc.ok && (err != nil || got != tc.want) {
			t.Errorf("PosixFileMode(%v) = %#o, %v; want %#o", tc.mode, got, err, tc.want)
		}
		if !tc.ok && !errors.Is(err, contract.ErrFileMode) {
			t.Errorf("PosixFileMode(%v) = %#o, %v; want ErrFileMode", tc.mode, got, err)
		}
	}
}

// EXP-06: the bounded read's refusal is typed.
func TestFileTooLargeError(t *testing.T) {
	var err error = fmt.Errorf("read: %w", &contract.FileTooLargeError{Path: "/a", Size: 4, MaxBytes: 3})
	var tl *contract.FileTooLargeError
	if !errors.Is(err, contract.ErrFileTooLarge) || !errors.As(err, &tl) || tl.Size != 4 {
		t.Fatalf("%v does not match ErrFileTooLarge with its size", err)
	}
	if !strings.Contains(err.Error(), "4 bytes") {
		t.Errorf("message %q", err)
	}
	if msg := (&contract.FileTooLargeError{Path: "/a", Size: -1, MaxBytes: 3}).Error(); strings.Contains(msg, "-1") {
		t.Errorf("an unknown size is spelled out: %q", msg)
	}
}

// Spec J (list): every queried metadata member must equal the persisted
// one exactly.
func TestExactProcessQueryMatches(t *testing.T) {
	meta := map[string]canonjson.Value{
		"candidate": canonjson.StringValue("c-1"),
		"attempt":   canonjson.NumberValue(2),
		"tags": canonjson.ObjectValue([]canonjson.Member{
			{Name: "a", Value: canonjson.BoolValue(true)}, {Name: "b", Value: canonjson.NullValue()}}),
	}
	for _, tc := range []struct {
		name  string
		query *contract.ExactProcessEnvironmentQuery
		want  bool
	}{
		{"nil query", nil, true},
		{"empty query", &contract.ExactProcessEnvironmentQuery{}, true},
		{"one member", &contract.ExactProcessEnvironmentQuery{Metadata: map[string]canonjson.Value{"candidate": canonjson.StringValue("c-1")}}, true},
		{"object in another member order", &contract.ExactProcessEnvironmentQuery{Metadata: map[string]canonjson.Value{"tags": canonjson.ObjectValue([]canonjson.Member{
			{Name: "b", Value: canonjson.NullValue()}, {Name: "a", Value: canonjson.BoolValue(true)}})}}, true},
		{"different value", &contract.ExactProcessEnvironmentQuery{Metadata: map[string]canonjson.Value{"candidate": canonjson.StringValue("c-2")}}, false},
		{"number as string", &contract.ExactProcessEnvironmentQuery{Metadata: map[string]canonjson.Value{"attempt": canonjson.StringValue("2")}}, false},
		{"absent member", &contract.ExactProcessEnvironmentQuery{Metadata: map[string]canonjson.Value{"other": canonjson.StringValue("x")}}, false},
		{"partial object", &contract.ExactProcessEnvironmentQuery{Metadata: map[string]canonjson.Value{"tags": canonjson.ObjectValue([]canonjson.Member{
			{Name: "a", Value: canonjson.BoolValue(true)}})}}, false},
	} {
		if got := contract.ExactProcessQueryMatches(tc.query, meta); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// EXP-09: a timeout, a signal and a cancellation stay distinct from an
// exit, and from each other.
func TestSameProcessTermination(t *testing.T) {
	i := func(v int64) *int64 { return &v }
	s := func(v string) *string { return &v }
	terms := []*contract.ProcessTermination{
		{Kind: contract.TerminationExit, ExitCode: i(0)},
		{Kind: contract.TerminationExit, ExitCode: i(1)},
		{Kind: contract.TerminationTimeout, TimeoutMs: i(1000)},
		{Kind: contract.TerminationTimeout, TimeoutMs: i(2000)},
		{Kind: contract.TerminationSignal, Signal: s("SIGKILL")},
		{Kind: contract.TerminationSignal, Signal: s("SIGTERM")},
		{Kind: contract.TerminationCancelled},
	}
	for a, x := range terms {
		for b, y := range terms {
			if got := contract.SameProcessTermination(x, y); got != (a == b) {
				t.Errorf("SameProcessTermination(%d, %d) = %v", a, b, got)
			}
		}
		cp := *x
		if !contract.SameProcessTermination(x, &cp) {
			t.Errorf("a copy of %d differs", a)
		}
		if contract.SameProcessTermination(x, nil) || contract.SameProcessTermination(nil, x) {
			t.Error("nil matched a termination")
		}
	}
}

const exactCreateJSON = `{"image":"registry.example.com/img@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	"egress":{"mode":"blocked"},"maxLifetimeMs":600000,"resources":{"cpu":1,"memoryMb":512,"diskMb":1024},
	"metadata":{"candidate":"c-1"},"idempotencyKey":"k"}`

func exactCreate(t *testing.T, edit func(in *contract.CreateExactProcessInput)) *contract.CreateExactProcessInput {
	t.Helper()
	in, err := contract.ParseCreateExactProcessInput([]byte(exactCreateJSON))
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(in)
	}
	return in
}

// EXP-11: collision-safe idempotent exact creates, on the keyed-create
// machinery: same key and input replay, a changed input under the key is
// refused before any effect, concurrent creates are one effect, a failed
// create frees the key, and the create sees a detached copy.
func TestKeyedExactProcessCreate(t *testing.T) {
	ctx := context.Background()
	var effects atomic.Int32
	create := func(_ context.Context, in *contract.CreateExactProcessInput) (*envFakeEnv, error) {
		return &envFakeEnv{id: fmt.Sprintf("exact-%d", effects.Add(1))}, nil
	}
	t.Run("replay", func(t *testing.T) {
		var k contract.KeyedExactProcessCreate[*envFakeEnv]
		effects.Store(0)
		first, c1, err := k.Do(ctx, exactCreate(t, nil), create)
		if err != nil || c1 != contract.CreationCreated {
			t.Fatal(c1, err)
		}
		again, c2, err := k.Do(ctx, exactCreate(t, nil), create)
		if err != nil || c2 != contract.CreationReplayed || again != first || effects.Load() != 1 {
			t.Fatalf("replay: %v %q %v, %d effects", again, c2, err, effects.Load())
		}
	})
	t.Run("changed input conflicts before any effect", func(t *testing.T) {
		var k contract.KeyedExactProcessCreate[*envFakeEnv]
		effects.Store(0)
		if _, _, err := k.Do(ctx, exactCreate(t, nil), create); err != nil {
			t.Fatal(err)
		}
		for name, edit := range map[string]func(*contract.CreateExactProcessInput){
			"lifetime": func(in *contract.CreateExactProcessInput) { in.MaxLifetimeMs += 1000 },
			"image":    func(in *contract.CreateExactProcessInput) { in.Image = strings.Replace(in.Image, "aaaa", "bbbb", 1) },
			"metadata": func(in *contract.CreateExactProcessInput) { in.Metadata["candidate"] = canonjson.StringValue("c-2") },
			"egress": func(in *contract.CreateExactProcessInput) {
				in.Egress = contract.EgressPolicy{Mode: contract.EgressStrict, AllowDomains: []string{"pypi.org"}}
			},
			"provision timeout": func(in *contract.CreateExactProcessInput) { v := int64(5); in.ProvisionTimeoutMs = &v },
		} {
			if _, _, err := k.Do(ctx, exactCreate(t, edit), create); !errors.Is(err, contract.ErrIdempotencyConflict) {
				t.Errorf("%s changed under the key: %v, want ErrIdempotencyConflict", name, err)
			}
		}
		if effects.Load() != 1 {
			t.Errorf("refusals had %d effects", effects.Load()-1)
		}
		if _, c, err := k.Do(ctx, exactCreate(t, func(in *contract.CreateExactProcessInput) { in.IdempotencyKey = "k2" }), create); err != nil || c != contract.CreationCreated {
			t.Errorf("the same input under another key: %q %v, want created", c, err)
		}
	})
	t.Run("concurrent creates are one effect", func(t *testing.T) {
		var k contract.KeyedExactProcessCreate[*envFakeEnv]
		effects.Store(0)
		release := make(chan struct{})
		slow := func(ctx context.Context, in *contract.CreateExactProcessInput) (*envFakeEnv, error) {
			<-release
			return create(ctx, in)
		}
		var wg sync.WaitGroup
		var created atomic.Int32
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, c, err := k.Do(ctx, exactCreate(t, nil), slow)
				if err != nil {
					t.Error(err)
				}
				if c == contract.CreationCreated {
					created.Add(1)
				}
			}()
		}
		close(release)
		wg.Wait()
		if effects.Load() != 1 || created.Load() != 1 {
			t.Errorf("%d effects, %d created verdicts; want 1 and 1", effects.Load(), created.Load())
		}
	})
	t.Run("a failed create frees the key", func(t *testing.T) {
		var k contract.KeyedExactProcessCreate[*envFakeEnv]
		boom := errors.New("boom")
		if _, _, err := k.Do(ctx, exactCreate(t, nil), func(context.Context, *contract.CreateExactProcessInput) (*envFakeEnv, error) {
			return nil, boom
		}); !errors.Is(err, boom) {
			t.Fatal(err)
		}
		if _, c, err := k.Do(ctx, exactCreate(t, nil), create); err != nil || c != contract.CreationCreated {
			t.Errorf("retry after a failure: %q %v", c, err)
		}
		k.Forget("k")
		if _, c, err := k.Do(ctx, exactCreate(t, func(in *contract.CreateExactProcessInput) { in.MaxLifetimeMs++ }), create); err != nil || c != contract.CreationCreated {
			t.Errorf("a forgotten key: %q %v", c, err)
		}
	})
	t.Run("the create sees a detached copy", func(t *testing.T) {
		var k contract.KeyedExactProcessCreate[*envFakeEnv]
		in := exactCreate(t, nil)
		var seen *contract.CreateExactProcessInput
		if _, _, err := k.Do(ctx, in, func(_ context.Context, got *contract.CreateExactProcessInput) (*envFakeEnv, error) {
			seen = got
			return &envFakeEnv{}, nil
		}); err != nil {
			t.Fatal(err)
		}
		in.Metadata["candidate"] = canonjson.StringValue("changed")
		if seen == in || seen.Metadata["candidate"].Str() != "c-1" {
			t.Error("the create shares the caller's input")
		}
	})
	t.Run("invalid input and a done context are refused", func(t *testing.T) {
		var k contract.KeyedExactProcessCreate[*envFakeEnv]
		var se *schema.Error
		if _, _, err := k.Do(ctx, exactCreate(t, func(in *contract.CreateExactProcessInput) { in.MaxLifetimeMs = 0 }), create); !errors.As(err, &se) {
			t.Errorf("an invalid input: %v, want a *schema.Error", err)
		}
		if _, _, err := k.Do(ctx, nil, create); !errors.Is(err, contract.ErrCreateInput) {
			t.Errorf("a nil input: %v", err)
		}
		done, cancel := context.WithCancel(ctx)
		cancel()
		if _, _, err := k.Do(done, exactCreate(t, nil), create); !errors.Is(err, context.Canceled) {
			t.Errorf("a done context: %v", err)
		}
	})
}
