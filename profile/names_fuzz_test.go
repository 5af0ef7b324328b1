package profile_test

import (
	"regexp"
	"testing"

	"github.com/agentrt/agentrt/profile"
)

// The regular expressions the name predicates once were (and the
// reference writes; ENP-03 for the credential-bearing config name): the
// hand-written matchers must agree with them on every input.
var (
	refCredentialName = regexp.MustCompile(`(?:^|[_-])(?:api[_-]?key|access[_-]?key|private[_-]?key|token|secret|password|credentials?|authorization|cookie|database[_-]?url|dsn|pat)(?:[_-]|$)`)
	refEnvName        = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	refHeaderName     = regexp.MustCompile("^[!#$%&'*+\\-.^_`|~0-9A-Za-z]+$")
)

func refASCIILower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// checkNameMatchers compares the three predicates with their regular
// expressions on s.
func checkNameMatchers(t *testing.T, s string) {
	t.Helper()
	if got, want := profile.IsCredentialBearingProfileConfigName(s), refCredentialName.MatchString(refASCIILower(s)); got != want {
		t.Errorf("IsCredentialBearingProfileConfigName(%q) = %v, the regexp says %v", s, got, want)
	}
	if got, want := profile.IsEnvironmentName(s), refEnvName.MatchString(s); got != want {
		t.Errorf("IsEnvironmentName(%q) = %v, the regexp says %v", s, got, want)
	}
	if got, want := profile.IsHeaderName(s), refHeaderName.MatchString(s); got != want {
		t.Errorf("IsHeaderName(%q) = %v, the regexp says %v", s, got, want)
	}
}

var nameSeeds = []string{
	"", "_", "-", "a", "0", "A0_", "0A", "PATH", "my_var", "x-y", "X-Request-Id", "a b", "é", "a\n", "a\x00",
	"!#$%&'*+-.^_`|~", "(", "a:b", "api_key", "API-KEY", "apikey", "api__key", "x-apikey-y", "xapikey",
	"access_key_id", "private-key", "token", "tokens", "my_token", "token_", "_token", "mytoken",
	"secret", "SECRET_VALUE", "password", "passwords", "credential", "credentials", "credentialsx",
	"authorization", "cookie", "cookies", "database_url", "databaseurl", "database-url", "database__url",
	"dsn", "DSN_", "xdsn", "pat", "my-pat", "spat", "pat-", "path", "a-pat-b", "\u212aey", "api_\u212aey",
}

// TestNameMatchersAgreeWithRegexps runs the seeds and every string of up
// to three characters over an alphabet of delimiters, word letters and
// characters each predicate treats specially.
func TestNameMatchersAgreeWithRegexps(t *testing.T) {
	for _, s := range nameSeeds {
		checkNameMatchers(t, s)
	}
	alphabet := []string{"", "_", "-", "a", "P", "0", "!", " ", "é", "pat", "dsn", "api", "key", "API_KEY"}
	for _, x := range alphabet {
		for _, y := range alphabet {
			for _, z := range alphabet {
				checkNameMatchers(t, x+y+z)
			}
		}
	}
}

// FuzzNameMatchers is the differential check of the hand-written name
// predicates against their regular expressions.
func FuzzNameMatchers(f *testing.F) {
	for _, s := range nameSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkNameMatchers(t, s)
	})
}
