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

// NSO-01/NSO-02 over the wire for a detached session: the answer of
// RouteSessionNativeSession decodes strictly — an observation the
// contract accepts, or none (unknown) — and everything else is a
// *schema.Error whose path names the offending member.
func TestParseSessionNativeSession(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       *wire.SessionNativeSession
		path       string // of the refusal; "" when accepted
	}{
		{name: "observed", body: `{"observation":{"provider":"scripted","nativeSessionId":"s-1"}}`,
			want: &wire.SessionNativeSession{Observation: &contract.NativeSessionObserved{Provider: "scripted", NativeSessionID: "s-1"}}},
		{name: "unknown", body: `{}`, want: &wire.SessionNativeSession{}},
		{name: "an unknown member", body: `{"turnId":"t1"}`, path: `(root): unknown member "turnId"`},
		{name: "an empty id", body: `{"observation":{"provider":"scripted","nativeSessionId":""}}`, path: "/observation/nativeSessionId"},
		{name: "an extra member in the observation", body: `{"observation":{"provider":"p","nativeSessionId":"s","type":"native.session.observed"}}`, path: `/observation: unknown member "type"`},
		{name: "not an object", body: `null`, path: ""},
		{name: "too large", body: `{"observation":{"provider":"p","nativeSessionId":"` + strings.Repeat("a", wire.MaxTurnNativeSessionBytes) + `"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := wire.ParseSessionNativeSession([]byte(tc.body))
			if tc.want != nil {
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(tc.want, got); d != "" {
					t.Errorf("decoded (-want +got):\n%s", d)
				}
				return
			}
			var se *schema.Error
			if !errors.As(err, &se) {
				t.Fatalf("got %+v, %v; want a *schema.Error", got, err)
			}
			if tc.path != "" && !strings.Contains(err.Error(), tc.path) {
				t.Errorf("refusal %v does not name %s", err, tc.path)
			}
		})
	}
}

// FuzzSessionNativeSession: any body is refused with a *schema.Error or
// accepted without a panic; an accepted one re-encodes to a body that
// decodes to the same value, and its observation passes the contract's
// rule.
func FuzzSessionNativeSession(f *testing.F) {
	for _, s := range []string{
		`{"observation":{"provider":"scripted","nativeSessionId":"s-1"}}`, `{}`,
		`{"observation":{"provider":"claude-code","nativeSessionId":"96746402-3b7e-472c-b007-b5770d1c08aa"}}`,
		`{"observation":{"provider":"x","nativeSessionId":"a\u00a0b"}}`, `{"observation":null}`, `null`, `[]`,
		`{"observation":{"provider":"x","nativeSessionId":"\ud800"}}`, `{"turnId":"t"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := wire.ParseSessionNativeSession(data)
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
		again, err := wire.ParseSessionNativeSession(b)
		if err != nil {
			t.Fatalf("re-encoded %s refused: %v", b, err)
		}
		if d := cmp.Diff(got, again); d != "" {
			t.Fatalf("round trip (-first +second):\n%s", d)
		}
	})
}
