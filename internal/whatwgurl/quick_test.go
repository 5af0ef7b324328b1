package whatwgurl

import (
	"testing"
)

// quickSeeds are inputs at the edges of quickHTTP's shape: each one is
// either inside it (and must parse as http or https) or just outside it.
var quickSeeds = []struct {
	input string
	quick bool // quickHTTP recognizes it
	valid bool // IsHTTP
}{
	{"https://mcp.example.test", true, true},
	{"http://localhost", true, true},
	{"https://a.b.c/path?q=1#f", true, true},
	{"https://A.EXAMPLE.COM/", true, true},
	{"http://example.com.", true, true},
	{"http://under_score-dash.x", true, true},
	{"http://h:8080/x", true, true},
	{"http://h:/x", true, true},
	{"http://h:", true, true},
	{"http://h:65535", true, true},
	{"http://h:00080", true, true},
	{"http://h#frag", true, true},
	{"http://h?q", true, true},
	{"http://h/\xff\t\n ", true, true},
	{"http://h/a@b\\c", true, true},
	{"http://h:65536", false, false},
	{"http://h:000080", false, true}, // six digits: parsed
	{"http://h:8a", false, false},    // not a port
	{"http://h:80@evil.example", false, true},
	{"http://user@h", false, true},  // userinfo: parsed
	{"http://1.2.3.4", false, true}, // IPv4: parsed
	{"http://1.2.3.256", false, false},
	{"http://a.1", false, false},   // ends in a number
	{"http://a.0x1", false, false}, // ends in a hex number
	{"http://a.1.", false, false},  // one trailing dot is skipped
	{"http://a..", false, true},    // ends in an empty label: not a number
	{"http://.", false, true},
	{"http://xn--nxasmq6b.com", false, true}, // punycode: IDNA
	{"http://a.XN--zz", false, false},
	{"http://", false, false},
	{"http:///h", false, true}, // extra slashes are ignored: parsed
	{"http:h", false, true},
	{"HTTP://h", false, true},
	{" http://h", false, true},
	{"http://h ", false, true},
	{"http://h\\x", false, true},
	{"http://h%41", false, true},
	{"http://[::1]/", false, true},
	{"ftp://h", false, false},
	{"https:", false, false},
	{"", false, false},
}

func TestQuickHTTP(t *testing.T) {
	for _, tt := range quickSeeds {
		if got := quickHTTP(tt.input); got != tt.quick {
			t.Errorf("quickHTTP(%q) = %v, want %v", tt.input, got, tt.quick)
		}
		if got := IsHTTP(tt.input); got != tt.valid {
			t.Errorf("IsHTTP(%q) = %v, want %v", tt.input, got, tt.valid)
		}
	}
}

// TestQuickHTTPNodeCorpus holds quickHTTP to what Node.js made of the
// corpus: every input it recognizes was an http: or https: URL there.
func TestQuickHTTPNodeCorpus(t *testing.T) {
	recognized := 0
	for _, c := range loadCorpus(t) {
		if !quickHTTP(c.Input) {
			continue
		}
		recognized++
		if c.Fail || c.Protocol != "http:" && c.Protocol != "https:" {
			t.Errorf("quickHTTP(%q) = true, but Node.js gave fail=%v protocol=%q", c.Input, c.Fail, c.Protocol)
		}
	}
	if recognized < 20 {
		t.Errorf("quickHTTP recognized only %d corpus inputs; the test shows little", recognized)
	}
}

// FuzzQuickHTTP is the differential check of the fast path: whenever
// quickHTTP claims an input is an http or https URL, the full parser must
// agree, and IsHTTP must give the full parser's verdict on every input.
func FuzzQuickHTTP(f *testing.F) {
	for _, tt := range quickSeeds {
		f.Add(tt.input)
	}
	f.Fuzz(func(t *testing.T, input string) {
		u, err := Parse(input)
		want := err == nil && (u.Protocol == "http:" || u.Protocol == "https:")
		if quickHTTP(input) && !want {
			t.Fatalf("quickHTTP(%q) = true, but Parse gives %+v, %v", input, u, err)
		}
		if got := IsHTTP(input); got != want {
			t.Fatalf("IsHTTP(%q) = %v, Parse says %v", input, got, want)
		}
	})
}
