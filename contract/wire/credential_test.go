package wire_test

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/wire"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/schema"
)

func seatRequest(occasion string) *contract.CredentialRequest {
	team := "team-b"
	return &contract.CredentialRequest{Stage: 1, Harness: "cli-base", Provider: "scripted", Model: "scripted/second",
		Selector: profile.SeatSelector{Kind: profile.SelectorSeat, ID: &team}, Occasion: occasion}
}

// RG-07, RG-10: a stage's credential request — which stage asks and its
// account selector, never a credential — travels in its own header and
// decodes to exactly what was sent.
func TestCredentialRequestHeaderRoundTripRG07(t *testing.T) {
	for _, r := range []*contract.CredentialRequest{
		seatRequest(contract.CredentialOnCreate),
		seatRequest(contract.CredentialOnTurn),
		{Stage: 0, Harness: "cli-base", Provider: "scripted", Model: "scripted/first",
			Selector: profile.SeatSelector{Kind: profile.SelectorAllEligible}, Occasion: contract.CredentialOnCreate},
	} {
		h := http.Header{}
		if err := wire.SetCredentialRequest(h, r); err != nil {
			t.Fatal(err)
		}
		got, err := wire.CredentialRequestFrom(&http.Request{Header: h})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(r, got); diff != "" {
			t.Errorf("round trip (-sent +received):\n%s", diff)
		}
	}
	h := http.Header{}
	h.Set(wire.HeaderCredentialRequest, "x")
	if err := wire.SetCredentialRequest(h, nil); err != nil || h.Get(wire.HeaderCredentialRequest) != "" {
		t.Errorf("a nil request left the header %q (%v)", h.Get(wire.HeaderCredentialRequest), err)
	}
	if got, err := wire.CredentialRequestFrom(&http.Request{Header: http.Header{}}); got != nil || err != nil {
		t.Errorf("no header decoded to %+v, %v", got, err)
	}
}

// The header decodes strictly: every refusal is a *schema.Error, and a
// shape refusal names the JSON pointer of the offending member.
func TestParseCredentialRequestStrict(t *testing.T) {
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	const base = `"harness":"cli-base","provider":"scripted","model":"m","selector":{"kind":"all-eligible"}`
	for _, tc := range []struct {
		name, value, path, code string
	}{
		{"not base64url", "{not base64}", "", schema.CodeInvalidType},
		{"padded", base64.URLEncoding.EncodeToString([]byte(`{"a":1}`)), "", schema.CodeInvalidType},
		{"too large", strings.Repeat("A", wire.MaxCredentialHeaderBytes+1), "", schema.CodeTooBig},
		{"not JSON", enc(`{"stage":`), "", ""},
		{"unknown member", enc(`{"stage":0,"occasion":"turn",` + base + `,"token":"x"}`), "", ""},
		{"negative stage", enc(`{"stage":-1,"occasion":"turn",` + base + `}`), "/stage", schema.CodeTooSmall},
		{"fractional stage", enc(`{"stage":0.5,"occasion":"turn",` + base + `}`), "/stage", schema.CodeInvalidType},
		{"bad occasion", enc(`{"stage":0,"occasion":"later",` + base + `}`), "/occasion", ""},
		{"seat without id", enc(`{"stage":0,"occasion":"turn","harness":"cli-base","provider":"scripted","model":"m","selector":{"kind":"seat"}}`), "/selector/id", ""},
		{"bad provider", enc(`{"stage":0,"occasion":"turn","harness":"cli-base","provider":"Bad Name","model":"m","selector":{"kind":"all-eligible"}}`), "/provider", ""},
		{"unknown harness", enc(`{"stage":0,"occasion":"turn","harness":"nope","provider":"scripted","model":"m","selector":{"kind":"all-eligible"}}`), "/harness", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := wire.ParseCredentialRequest(tc.value)
			var se *schema.Error
			if !errors.As(err, &se) || len(se.Issues) == 0 {
				t.Fatalf("ParseCredentialRequest = %+v, %v; want a *schema.Error", got, err)
			}
			if tc.path != "" && se.Issues[0].Path != tc.path {
				t.Errorf("path %q, want %q (%v)", se.Issues[0].Path, tc.path, err)
			}
			if tc.code != "" && se.Issues[0].Code != tc.code {
				t.Errorf("code %q, want %q (%v)", se.Issues[0].Code, tc.code, err)
			}
		})
	}
	h := http.Header{}
	h.Add(wire.HeaderCredentialRequest, "a")
	h.Add(wire.HeaderCredentialRequest, "b")
	if _, err := wire.CredentialRequestFrom(&http.Request{Header: h}); err == nil {
		t.Error("two header values were accepted")
	}
	if _, err := wire.EncodeCredentialRequest(&contract.CredentialRequest{Stage: 0, Harness: "cli-base", Provider: "scripted", Model: "m",
		Selector: profile.SeatSelector{Kind: profile.SelectorSeat}, Occasion: contract.CredentialOnTurn}); err == nil {
		t.Error("a seat selector without an account id was encoded")
	}
}

// PRF-11, RG-08: a served provider's quota refusal crosses the wire as
// quota_refused and is, for the client, the same typed refusal a local
// provider returns, so a seated run moves on to its next stage.
func TestQuotaRefusalCrossesTheWireRG08(t *testing.T) {
	hour := time.Hour
	for _, q := range []*contract.QuotaRefusalError{
		{Provider: "scripted", Stage: 1, RetryAfter: &hour, Message: "the window is used up"},
		{Provider: "scripted", Stage: -1},
		// A refusal that broke a turn off part way names the run, so the
		// client can continue its native session.
		{Provider: "scripted", Stage: 0, Message: "ran out mid-turn", Run: &contract.ExactRunControlRef{RunID: "run-1", Provider: "scripted",
			EnvironmentID: "env-1", SessionID: "sess-1", ExecutionID: "exec-1", RequestDigest: "sha256:" + strings.Repeat("ab", 32)}},
	} {
		d := wire.QuotaError(q)
		body, err := wire.Marshal(wire.ErrorBody{Error: d})
		if err != nil {
			t.Fatal(err)
		}
		eb, err := wire.ParseErrorBody(body)
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		var werr error = &wire.Error{Status: wire.Status(eb.Error.Code), ErrorDetail: eb.Error}
		var got *contract.QuotaRefusalError
		if !errors.As(werr, &got) || !errors.Is(werr, contract.ErrQuotaRefused) {
			t.Fatalf("%v is not a quota refusal", werr)
		}
		if diff := cmp.Diff(q, got); diff != "" {
			t.Errorf("refusal (-sent +received):\n%s", diff)
		}
		if wire.Status(eb.Error.Code) != http.StatusTooManyRequests {
			t.Errorf("status %d", wire.Status(eb.Error.Code))
		}
	}
	var q *contract.QuotaRefusalError
	if errors.As(&wire.Error{Status: 502, ErrorDetail: wire.ErrorDetail{Code: wire.CodeProvider}}, &q) {
		t.Error("a provider error became a quota refusal")
	}
}

// FuzzParseCredentialRequest: the header decoder refuses or accepts any
// value without panicking, and an accepted request re-encodes to a value
// that decodes to the same request.
func FuzzParseCredentialRequest(f *testing.F) {
	for _, r := range []*contract.CredentialRequest{seatRequest(contract.CredentialOnCreate), seatRequest(contract.CredentialOnTurn)} {
		v, err := wire.EncodeCredentialRequest(r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(v)
	}
	f.Add("")
	f.Add("e30")
	f.Add(base64.RawURLEncoding.EncodeToString([]byte(`{"stage":1e309}`)))
	f.Fuzz(func(t *testing.T, value string) {
		r, err := wire.ParseCredentialRequest(value)
		if err != nil || r == nil {
			return
		}
		again, err := wire.EncodeCredentialRequest(r)
		if err != nil {
			t.Fatalf("an accepted request does not re-encode: %v", err)
		}
		back, err := wire.ParseCredentialRequest(again)
		if err != nil {
			t.Fatalf("re-encoded %q is refused: %v", again, err)
		}
		if diff := cmp.Diff(r, back); diff != "" {
			t.Fatalf("round trip changed the request (-first +second):\n%s", diff)
		}
	})
}

// BenchmarkCredentialRequestHeader is the per-call cost of the header: a
// client encodes it on every create and turn, a server decodes it.
func BenchmarkCredentialRequestHeader(b *testing.B) {
	r := seatRequest(contract.CredentialOnTurn)
	v, err := wire.EncodeCredentialRequest(r)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := wire.EncodeCredentialRequest(r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := wire.ParseCredentialRequest(v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
