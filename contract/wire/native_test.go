package wire_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/wire"
	"github.com/agentrt/agentrt/schema"
)

// NSO-02 over the wire: the native session answer decodes strictly —
// its observation by the contract's own native.session.observed rule —
// and every refusal is a *schema.Error naming the offending member.
func TestParseTurnNativeSessionNSO02(t *testing.T) {
	long := strings.Repeat("x", contract.MaxNativeSessionIDLength+1)
	for _, tc := range []struct {
		name, body string
		want       *wire.TurnNativeSession
		path       string // the refusal's first issue path; "" accepts
	}{
		{name: "observed", body: `{"turnId":"t1","observation":{"provider":"scripted","nativeSessionId":"s-1"}}`,
			want: &wire.TurnNativeSession{TurnID: "t1", Observation: &contract.NativeSessionObserved{Provider: "scripted", NativeSessionID: "s-1"}}},
		{name: "unknown", body: `{"turnId":"t1"}`, want: &wire.TurnNativeSession{TurnID: "t1"}},
		{name: "null observation", body: `{"turnId":"t1","observation":null}`, path: "/observation"},
		{name: "empty id", body: `{"turnId":"t1","observation":{"provider":"scripted","nativeSessionId":""}}`, path: "/observation/nativeSessionId"},
		{name: "padded id", body: `{"turnId":"t1","observation":{"provider":"scripted","nativeSessionId":" s"}}`, path: "/observation/nativeSessionId"},
		{name: "over-long id", body: `{"turnId":"t1","observation":{"provider":"scripted","nativeSessionId":"` + long + `"}}`, path: "/observation/nativeSessionId"},
		{name: "provider name", body: `{"turnId":"t1","observation":{"provider":"Scripted","nativeSessionId":"s"}}`, path: "/observation/provider"},
		{name: "type member", body: `{"turnId":"t1","observation":{"type":"native.session.observed","provider":"scripted","nativeSessionId":"s"}}`, path: "/observation"},
		{name: "unknown member", body: `{"turnId":"t1","sessionId":"s"}`, path: ""},
		{name: "no turn id", body: `{"observation":{"provider":"scripted","nativeSessionId":"s"}}`, path: "/turnId"},
		{name: "not an object", body: `[]`, path: ""},
		{name: "too large", body: `{"turnId":"` + strings.Repeat("a", wire.MaxTurnNativeSessionBytes) + `"}`, path: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := wire.ParseTurnNativeSession([]byte(tc.body))
			if tc.want != nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if d := cmp.Diff(tc.want, got); d != "" {
					t.Errorf("decoded (-want +got):\n%s", d)
				}
				return
			}
			var se *schema.Error
			if !errors.As(err, &se) || len(se.Issues) == 0 {
				t.Fatalf("error %v, want a *schema.Error", err)
			}
			if se.Issues[0].Path != tc.path {
				t.Errorf("path %q, want %q (%v)", se.Issues[0].Path, tc.path, err)
			}
		})
	}
}

// The refusal of a live turn is a 409 the client maps to a typed error.
func TestTurnNotEndedStatus(t *testing.T) {
	if got := wire.Status(wire.CodeTurnNotEnded); got != 409 {
		t.Errorf("status %d, want 409", got)
	}
}

// FuzzTurnNativeSession: any body is refused or accepted without a
// panic; an accepted one re-encodes to a body decoding to the same
// value, and its observation passes the contract's rule.
func FuzzTurnNativeSession(f *testing.F) {
	for _, s := range []string{
		`{"turnId":"t1","observation":{"provider":"scripted","nativeSessionId":"s-1"}}`,
		`{"turnId":"t1"}`,
		`{"turnId":"t1","observation":{"provider":"claude-code","nativeSessionId":"96746402-3b7e-472c-b007-b5770d1c08aa"}}`,
		`{"turnId":"t1","observation":{"provider":"x","nativeSessionId":"a\u00a0b"}}`,
		`{"turnId":"t1","observation":null}`, `{"turnId":""}`, `{}`, `null`, `"x"`,
		`{"turnId":"t1","observation":{"provider":"x","nativeSessionId":"\ud800"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := wire.ParseTurnNativeSession(data)
		if err != nil {
			var se *schema.Error
			if !errors.As(err, &se) {
				t.Fatalf("refusal %v is not a *schema.Error", err)
			}
			return
		}
		if o := got.Observation; o != nil {
			if _, err := contract.NewNativeSessionObserved(o.Provider, o.NativeSessionID); err != nil {
				t.Fatalf("accepted an observation the contract refuses: %v", err)
			}
		}
		b, err := wire.Marshal(got)
		if err != nil {
			t.Fatalf("accepted value has no JSON form: %v", err)
		}
		again, err := wire.ParseTurnNativeSession(b)
		if err != nil {
			t.Fatalf("re-encoded %s refused: %v", b, err)
		}
		if d := cmp.Diff(got, again); d != "" {
			t.Fatalf("round trip (-first +second):\n%s", d)
		}
	})
}

// BenchmarkParseTurnNativeSession: decoding one native session answer.
func BenchmarkParseTurnNativeSession(b *testing.B) {
	body := []byte(`{"turnId":"turn-0123456789abcdef","observation":{"provider":"claude-code","nativeSessionId":"96746402-3b7e-472c-b007-b5770d1c08aa"}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := wire.ParseTurnNativeSession(body); err != nil {
			b.Fatal(err)
		}
	}
}
