package cli

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/schema"
)

// The --seats file decodes strictly: every refusal is a *schema.Error
// whose first issue points (RFC 6901) at the offending member, and no
// secret can be written in it (RG-10: the runtime never holds a
// credential; a key is named by its environment variable).
func TestParseSeatAccountsRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, doc, path, has string
	}{
		{"not json", `{`, "", "end of input"},
		{"empty", `{}`, "", "names no provider"},
		{"unknown member", `{"stages":{"0":{"provider":"scripted"}},"extra":1}`, "", "extra"},
		{"unknown provider", `{"stages":{"0":{"provider":"gemini"}}}`, "/stages/0/provider", "one of"},
		{"inline key", `{"stages":{"0":{"provider":"openai","apiKey":"sk-live-123"}}}`, "/stages/0/apiKey", "apiKeyEnv"},
		{"inline token", `{"accounts":{"a":{"provider":"remote","baseUrl":"http://h","token":"t"}}}`, "/accounts/a/token", "tokenFile"},
		{"key in url", `{"stages":{"0":{"provider":"remote","baseUrl":"http://u:p@h"}}}`, "/stages/0/baseUrl", "without user"},
		{"not a url", `{"stages":{"0":{"provider":"openai","baseUrl":"ftp://h"}}}`, "/stages/0/baseUrl", "http"},
		{"remote needs url", `{"stages":{"0":{"provider":"remote"}}}`, "/stages/0/baseUrl", ""},
		{"bad env name", `{"stages":{"0":{"provider":"anthropic","apiKeyEnv":"1X"}}}`, "/stages/0/apiKeyEnv", "environment variable"},
		{"bad stage index", `{"stages":{"01":{"provider":"scripted"}}}`, "/stages/01", "stage index"},
		{"negative stage", `{"stages":{"-1":{"provider":"scripted"}}}`, "/stages/-1", "stage index"},
		{"wrong type", `{"stages":{"0":{"provider":"scripted","script":7}}}`, "/stages/0/script", ""},
		{"member of another provider", `{"stages":{"0":{"provider":"scripted","baseUrl":"http://h"}}}`, "/stages/0", "baseUrl"},
		{"escaped account", `{"accounts":{"a/b":{"provider":"openai","api":"soap"}}}`, "/accounts/a~1b/api", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseSeatAccounts([]byte(tc.doc))
			var se *schema.Error
			if !errors.As(err, &se) || len(se.Issues) == 0 {
				t.Fatalf("got %v, want a *schema.Error", err)
			}
			if se.Issues[0].Path != tc.path {
				t.Errorf("path %q, want %q (%v)", se.Issues[0].Path, tc.path, err)
			}
			if !strings.Contains(err.Error(), tc.has) {
				t.Errorf("%v does not say %q", err, tc.has)
			}
			if strings.Contains(err.Error(), "sk-live-123") {
				t.Errorf("the error echoes the secret: %v", err)
			}
		})
	}
	big := `{"stages":{"0":{"provider":"scripted","script":"` + strings.Repeat("a", maxSeatsFileLen) + `"}}}`
	if _, err := parseSeatAccounts([]byte(big)); !errors.As(err, new(*schema.Error)) {
		t.Errorf("an oversized file: %v", err)
	}
}

// PRF-03: a stage resolves by its index first, then by the account its
// seat's selector pins; an all-eligible seat resolves by index only.
func TestSeatAccountsLookup(t *testing.T) {
	a, err := parseSeatAccounts([]byte(`{"accounts":{"acct-a":{"provider":"openai","apiKeyEnv":"TEAM_A"}},
		"stages":{"1":{"provider":"scripted","script":"s.json"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	id := "acct-a"
	pinned := profile.Seat{Selector: profile.SeatSelector{Kind: profile.SelectorSeat, ID: &id}}
	any := profile.Seat{Selector: profile.SeatSelector{Kind: profile.SelectorAllEligible}}
	for _, tc := range []struct {
		stage int
		seat  profile.Seat
		want  seatProvider
		where string
	}{
		{0, pinned, seatProvider{Provider: "openai", APIKeyEnv: "TEAM_A"}, "/accounts/acct-a"},
		{1, pinned, seatProvider{Provider: "scripted", Script: "s.json"}, "/stages/1"},
		{2, any, seatProvider{}, ""},
	} {
		got, where, _ := a.lookup(tc.stage, tc.seat)
		if diff := cmp.Diff(tc.want, got); diff != "" || where != tc.where {
			t.Errorf("stage %d: where %q (-want +got):\n%s", tc.stage, where, diff)
		}
	}
}

// FuzzParseSeatAccounts: any bytes decode or are refused with a
// *schema.Error; never a panic; a decoded file names at least one
// provider each with a known name.
func FuzzParseSeatAccounts(f *testing.F) {
	for _, s := range []string{
		`{"stages":{"0":{"provider":"scripted"}}}`,
		`{"accounts":{"a":{"provider":"remote","baseUrl":"http://127.0.0.1:1","tokenFile":"t"}},"stages":{"3":{"provider":"codex","apiKeyEnv":"K"}}}`,
		`{"stages":{"0":{"provider":"openai","api":"responses","baseUrl":"https://x/v1"}}}`,
		`{"accounts":{"__proto__":{"provider":"scripted"}}}`,
		`{"stages":{"0":{"provider":"openai","apiKey":"x"}}}`,
		`[]`, `null`, `{"stages":{"0":{"provider":"scripted","script":"\u0000"}}}`,
	} {
		f.Add([]byte(s))
	}
	known := map[string]bool{"scripted": true, "openai": true, "anthropic": true, "claude-code": true, "codex": true, "opencode": true, "remote": true}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := parseSeatAccounts(data)
		if err != nil {
			if !errors.As(err, new(*schema.Error)) {
				t.Fatalf("untyped refusal %T: %v", err, err)
			}
			return
		}
		if len(a.Accounts)+len(a.Stages) == 0 {
			t.Fatal("a decoded file names no provider")
		}
		for _, m := range []map[string]seatProvider{a.Accounts, a.Stages} {
			for k, c := range m {
				if !known[c.Provider] {
					t.Fatalf("%s: unknown provider %q decoded", k, c.Provider)
				}
			}
		}
	})
}
