package profile

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/internal/whatwgurl"
)

var processControlNames = map[string]bool{}

func init() {
	for _, n := range strings.Fields(`ALL_PROXY BASH_ENV CDPATH COMSPEC CURL_CA_BUNDLE
		DBUS_SESSION_BUS_ADDRESS ENV GEM_HOME GEM_PATH GIT_ASKPASS GIT_PROXY_COMMAND
		GIT_SSH_COMMAND GIT_SSL_NO_VERIFY HOME HOMEDRIVE HOMEPATH HTTP_PROXY HTTPS_PROXY IFS
		LD_AUDIT LD_LIBRARY_PATH LD_PRELOAD LOGNAME NODE_EXTRA_CA_CERTS NODE_OPTIONS NODE_PATH
		NODE_TLS_REJECT_UNAUTHORIZED NO_PROXY NVM_DIR PATH PERL5LIB PERL5OPT PNPM_HOME
		PROMPT_COMMAND PWD PYTHONHOME PYTHONPATH PYTHONSTARTUP REQUESTS_CA_BUNDLE RUBYLIB
		RUBYOPT SHELL SHELLOPTS SSH_ASKPASS SSL_CERT_DIR SSL_CERT_FILE SSLKEYLOGFILE TEMP TMP
		TMPDIR USER USERPROFILE XDG_CACHE_HOME XDG_CONFIG_HOME XDG_DATA_HOME XDG_RUNTIME_DIR
		XDG_STATE_HOME`) {
		processControlNames[n] = true
	}
}

// IsRuntimeProcessControlEnvironmentName reports whether name, upper-cased,
// is an environment variable that controls how a process runs (its search
// path, home, shell, loader, proxies, CA trust, interpreter options…): one
// of the listed names, or a DYLD_ or GIT_CONFIG_ prefix, or a _PROXY
// suffix. Reject such names when caller-supplied variables merge into a
// bridge, sidecar or harness process. The check does not apply to a
// replacement environment that caller code owns entirely.
func IsRuntimeProcessControlEnvironmentName(name string) bool {
	n := strings.ToUpper(name)
	return processControlNames[n] || strings.HasPrefix(n, "DYLD_") ||
		strings.HasPrefix(n, "GIT_CONFIG_") || strings.HasSuffix(n, "_PROXY")
}

// credentialWords are the spellings of the credential words, each
// optional "_" or "-" and "s" written out: the reference's regular
// expression
//
//	(?:^|[_-])(?:api[_-]?key|access[_-]?key|private[_-]?key|token|secret|password|credentials?|authorization|cookie|database[_-]?url|dsn|pat)(?:[_-]|$)
//
// applied to the ASCII-lowered name (never with (?i): Go's case folding
// would match the Kelvin sign and the long s, JavaScript's does not).
// FuzzCredentialName holds the two to the same verdicts.
var credentialWords = []string{
	"apikey", "api_key", "api-key",
	"accesskey", "access_key", "access-key",
	"privatekey", "private_key", "private-key",
	"token", "secret", "password", "credential", "credentials",
	"authorization", "cookie",
	"databaseurl", "database_url", "database-url",
	"dsn", "pat",
}

// IsCredentialBearingProfileConfigName reports whether a config name denotes
// credential material: it holds a credential word (api key, access key,
// private key, token, secret, password, credential(s), authorization,
// cookie, database url, dsn, pat) delimited by the ends of the name, "_" or
// "-". Matching is ASCII case-insensitive. A public value under such a name
// is refused; use a secret reference.
func IsCredentialBearingProfileConfigName(name string) bool {
	s := asciiLower(name)
	for start := 0; start <= len(s); start++ {
		if start > 0 && s[start-1] != '_' && s[start-1] != '-' {
			continue
		}
		rest := s[start:]
		for _, w := range credentialWords {
			if strings.HasPrefix(rest, w) && (len(rest) == len(w) || rest[len(w)] == '_' || rest[len(w)] == '-') {
				return true
			}
		}
	}
	return false
}

func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if c := b[j]; c >= 'A' && c <= 'Z' {
					b[j] = c + 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

var obviousSecret = regexp.MustCompile(`\bsk[-_][-_A-Za-z0-9]{10,}\b|\bgh[pousr]_[A-Za-z0-9]{12,}\b|\bgithub_pat_[A-Za-z0-9_]{12,}\b|\bAKIA[A-Z0-9]{12,}\b|-----BEGIN [A-Z ]*PRIVATE KEY-----`)

// LooksLikeCredential reports whether a value that is meant to be public
// carries credential material: a recognizable secret token (sk-…, ghp_…,
// github_pat_…, AKIA…, a PEM private key header, "Bearer <token>"), or a URL
// with a username or password or a credential-named query parameter.
func LooksLikeCredential(value string) bool {
	return mayHoldSecretToken(value) && obviousSecret.MatchString(value) ||
		hasBearerToken(value) || hasCredentialBearingURL(value)
}

// mayHoldSecretToken is a necessary condition for obviousSecret to match:
// every alternative contains one of these literals. It spares the regular
// expression on ordinary text.
func mayHoldSecretToken(s string) bool {
	return strings.Contains(s, "sk-") || strings.Contains(s, "sk_") || strings.Contains(s, "gh") ||
		strings.Contains(s, "AKIA") || strings.Contains(s, "-----BEGIN ")
}

// hasBearerToken matches /\bBearer\s+\S+/ with JavaScript's \s.
func hasBearerToken(s string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], "Bearer")
		if j < 0 {
			return false
		}
		j += i
		i = j + 1
		if j > 0 && isWordByte(s[j-1]) {
			continue
		}
		k := j + len("Bearer")
		spaces := 0
		for k < len(s) {
			r, size := utf8.DecodeRuneInString(s[k:])
			if !canonjson.IsJSWhitespace(r) {
				break
			}
			k += size
			spaces++
		}
		if spaces > 0 && k < len(s) {
			return true
		}
	}
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

func hasCredentialBearingURL(s string) bool {
	// A URL carries credentials only through a literal "@" (userinfo) or a
	// query ("?"), after a scheme (":"); the parser cannot produce either
	// character from anything else.
	if !strings.Contains(s, ":") || !strings.ContainsAny(s, "@?") {
		return false
	}
	u, err := whatwgurl.Parse(s)
	if err != nil {
		return false
	}
	if u.Username != "" || u.Password != "" {
		return true
	}
	for _, name := range u.SearchParamNames() {
		if IsCredentialBearingProfileConfigName(name) {
			return true
		}
	}
	return false
}

// IsHTTPURL reports whether s parses (as JavaScript's new URL does) as an
// absolute URL whose protocol is http: or https:.
func IsHTTPURL(s string) bool { return whatwgurl.IsHTTP(s) }

var shellNames = map[string]bool{"sh": true, "bash": true, "zsh": true, "fish": true,
	"cmd": true, "cmd.exe": true, "powershell": true, "pwsh": true}

// IsSafeExecutable reports whether s names an executable that can be run
// without a shell: ASCII letters, digits and . _ + / - only, no empty, "."
// or ".." path segment, and not a shell (sh, bash, zsh, fish, cmd,
// cmd.exe, powershell, pwsh, compared case-insensitively).
func IsSafeExecutable(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '.' || c == '_' || c == '+' || c == '/' || c == '-') {
			return false
		}
	}
	last := ""
	for p := range strings.SplitSeq(strings.TrimPrefix(s, "/"), "/") {
		if p == "" || p == "." || p == ".." {
			return false
		}
		last = p
	}
	return !shellNames[asciiLower(last)]
}

// IsSafeRelativePath reports whether s is a canonical workspace-relative
// POSIX path: not empty, no control characters, well-formed, not absolute
// or drive-lettered, no backslash, no empty, "." or ".." segment, and no
// segment naming a reserved root (.git, .sidecar). "." alone is accepted
// when allowDot is true.
func IsSafeRelativePath(s string, allowDot bool) bool {
	if s == "" || canonjson.HasControl(s) || !canonjson.IsWellFormed(s) ||
		s[0] == '/' || strings.ContainsRune(s, '\\') || hasDriveLetter(s) {
		return false
	}
	if s == "." {
		return allowDot
	}
	for _, p := range strings.Split(s, "/") {
		if p == "" || p == "." || p == ".." || p == ".git" || p == ".sidecar" {
			return false
		}
	}
	return true
}

func hasDriveLetter(s string) bool {
	return len(s) >= 2 && s[1] == ':' && (s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z')
}

// IsEnvironmentName reports whether s is a portable environment variable
// name ([A-Za-z_][A-Za-z0-9_]*).
func IsEnvironmentName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isASCIIAlnum(c) && c != '_' {
			return false
		}
	}
	return true
}

// IsHeaderName reports whether s is an HTTP header field name (an RFC 9110
// token: one or more of ! # $ % & ' * + - . ^ _ ` | ~, digits and ASCII
// letters).
func IsHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isASCIIAlnum(c) && strings.IndexByte("!#$%&'*+-.^_`|~", c) < 0 {
			return false
		}
	}
	return true
}

func isASCIIAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
