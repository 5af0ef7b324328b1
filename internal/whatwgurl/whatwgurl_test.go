package whatwgurl

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"slices"
	"testing"
)

// corpusCase is one entry of testdata/node20.json: an input and what
// Node.js 20.20 (Ada 2.9.2) made of it with new URL(input). Fields that were
// empty are left out of the file and read as empty.
//
// The corpus was generated once with Node.js; the test does not need it. It
// holds hand-written cases for every part of the parser (schemes, special
// and non-special authorities, credentials, ports, IPv4 number forms, IPv6,
// forbidden host code points, percent-encoded and Unicode hosts, C0 and
// space trimming, tab and newline removal, backslashes, dot segments,
// Windows drive letters, queries, fragments, lone surrogates), the inputs of
// the web-platform-tests URL suite, every eighth source string of the
// Unicode IdnaTestV2 suite as a host, IDNA Bidi, ContextJ and Punycode
// probes, every ASCII character in every component, every percent-encoded
// byte in a query, and seeded random inputs.
type corpusCase struct {
	Input    string   `json:"input"`
	WTF8     string   `json:"wtf8"` // hex of the input's WTF-8 bytes, set when it holds a lone surrogate
	Fail     bool     `json:"fail"`
	Protocol string   `json:"protocol"`
	Username string   `json:"username"`
	Password string   `json:"password"`
	Hostname string   `json:"hostname"`
	Host     string   `json:"host"`
	Port     string   `json:"port"`
	Pathname string   `json:"pathname"`
	Search   string   `json:"search"`
	Hash     string   `json:"hash"`
	Href     string   `json:"href"`
	Params   []string `json:"params"`
}

func loadCorpus(t *testing.T) []corpusCase {
	t.Helper()
	path := "testdata/node20.json"
	if p := os.Getenv("WHATWGURL_CORPUS"); p != "" {
		path = p
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cases []corpusCase
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	for i := range cases {
		if cases[i].WTF8 != "" {
			b, err := hex.DecodeString(cases[i].WTF8)
			if err != nil {
				t.Fatalf("case %d: %v", i, err)
			}
			cases[i].Input = string(b)
		}
	}
	return cases
}

func TestNodeCorpus(t *testing.T) {
	cases := loadCorpus(t)
	if len(cases) < 300 {
		t.Fatalf("corpus has only %d cases", len(cases))
	}
	agree := 0
	for _, c := range cases {
		u, err := Parse(c.Input)
		if c.Fail {
			if err == nil {
				t.Errorf("Parse(%q) = %q, want failure", c.Input, u.Href)
				continue
			}
			agree++
			continue
		}
		if err != nil {
			t.Errorf("Parse(%q) failed: %v; want %q", c.Input, err, c.Href)
			continue
		}
		ok := true
		check := func(field, got, want string) {
			if got != want {
				ok = false
				t.Errorf("Parse(%q).%s = %q, want %q", c.Input, field, got, want)
			}
		}
		check("Protocol", u.Protocol, c.Protocol)
		check("Username", u.Username, c.Username)
		check("Password", u.Password, c.Password)
		check("Hostname", u.Hostname, c.Hostname)
		check("Host()", u.Host(), c.Host)
		check("Port", u.Port, c.Port)
		check("Pathname", u.Pathname, c.Pathname)
		check("Search", u.Search, c.Search)
		check("Hash", u.Hash, c.Hash)
		check("Href", u.Href, c.Href)
		if got := u.SearchParamNames(); !slices.Equal(got, c.Params) {
			ok = false
			t.Errorf("Parse(%q).SearchParamNames() = %q, want %q", c.Input, got, c.Params)
		}
		if ok {
			agree++
		}
	}
	t.Logf("%d of %d corpus inputs agree with Node.js 20", agree, len(cases))
}
