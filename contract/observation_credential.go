package contract

import (
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/agentrt/agentrt/canonjson"
)

// ErrObservationCredential is returned by AssertObservationCredentialFree
// for a payload that carries a credential.
var ErrObservationCredential = errors.New("observation payload must not carry a credential")

// obsCredentialWords are the secret-shaped whole words of a member name.
// Whole words, not substrings, so that a count such as inputTokens does
// not read as an auth token.
var obsCredentialWords = map[string]bool{
	"token": true, "secret": true, "secrets": true, "password": true, "passwd": true,
	"passphrase": true, "credential": true, "credentials": true, "authorization": true,
	"bearer": true, "key": true, "keys": true,
}

// ObservationContainsCredential reports whether an observation payload
// carries a credential: a member whose name has a secret-shaped word
// (camelCase and separators split words: apiKey, API_KEY and auth-token
// all do) or a string holding a URL with userinfo (scheme://user@…). x is
// a canonjson.Value or any Go value ToValue accepts; a value that has no
// JSON form is reported as carrying one (fail closed).
func ObservationContainsCredential(x any) bool {
	v, ok := x.(canonjson.Value)
	if !ok {
		var err error
		if v, err = canonjson.ToValue(x); err != nil {
			return true
		}
	}
	return obsContainsCredential(v)
}

// AssertObservationCredentialFree returns ErrObservationCredential when
// ObservationContainsCredential(x).
func AssertObservationCredentialFree(x any) error {
	if ObservationContainsCredential(x) {
		return ErrObservationCredential
	}
	return nil
}

func obsContainsCredential(v canonjson.Value) bool {
	switch v.Kind() {
	case canonjson.String:
		return obsHasUserinfoURL(v.Str())
	case canonjson.Array:
		for _, item := range v.Items() {
			if obsContainsCredential(item) {
				return true
			}
		}
	case canonjson.Object:
		for _, m := range v.Members() {
			if obsCredentialKey(m.Name) || obsContainsCredential(m.Value) {
				return true
			}
		}
	}
	return false
}

// obsCredentialKey splits name into lower-case ASCII words (runs of
// letters and digits, also split where a lower-case letter or digit is
// followed by an upper-case letter) and looks each up.
func obsCredentialKey(name string) bool {
	start := -1
	for i := 0; i <= len(name); i++ {
		alnum := i < len(name) && obsIsAlnum(name[i])
		boundary := alnum && start >= 0 && obsIsUpper(name[i]) && (obsIsLower(name[i-1]) || obsIsDigit(name[i-1]))
		if start >= 0 && (!alnum || boundary) {
			if obsCredentialWords[strings.ToLower(name[start:i])] {
				return true
			}
			start = -1
		}
		if alnum && start < 0 {
			start = i
		}
	}
	return false
}

func obsIsUpper(b byte) bool { return b >= 'A' && b <= 'Z' }
func obsIsLower(b byte) bool { return b >= 'a' && b <= 'z' }
func obsIsDigit(b byte) bool { return b >= '0' && b <= '9' }
func obsIsAlnum(b byte) bool { return obsIsUpper(b) || obsIsLower(b) || obsIsDigit(b) }

// obsHasUserinfoURL reports whether s contains scheme://userinfo@: an
// ASCII letter followed by letters, digits, "+", "." or "-", then "://",
// then characters other than "/", "@" and whitespace, then "@".
func obsHasUserinfoURL(s string) bool {
	for from := 0; ; {
		i := strings.Index(s[from:], "://")
		if i < 0 {
			return false
		}
		j := from + i
		from = j + 1
		// The run of scheme characters just before "://" must hold a
		// letter, where the scheme can start.
		hasLetter := false
		for k := j - 1; k >= 0 && obsIsSchemeByte(s[k]); k-- {
			if obsIsUpper(s[k]) || obsIsLower(s[k]) {
				hasLetter = true
				break
			}
		}
		if !hasLetter {
			continue
		}
		for k := j + 3; k < len(s); {
			if s[k] == '@' {
				return true
			}
			if s[k] == '/' {
				break
			}
			// An invalid byte (a stored lone surrogate) decodes as U+FFFD,
			// which is not whitespace, as in JavaScript.
			r, size := utf8.DecodeRuneInString(s[k:])
			if canonjson.IsJSWhitespace(r) {
				break
			}
			k += size
		}
	}
}

func obsIsSchemeByte(b byte) bool { return obsIsAlnum(b) || b == '+' || b == '.' || b == '-' }
