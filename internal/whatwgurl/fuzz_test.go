package whatwgurl

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"
)

// FuzzParse checks that Parse never panics and that the href of every URL it
// accepts parses again to the same URL (the WHATWG idempotence property).
func FuzzParse(f *testing.F) {
	data, err := os.ReadFile("testdata/node20.json")
	if err != nil {
		f.Fatal(err)
	}
	var cases []corpusCase
	if err := json.Unmarshal(data, &cases); err != nil {
		f.Fatal(err)
	}
	for _, c := range cases {
		if c.WTF8 != "" {
			b, err := hex.DecodeString(c.WTF8)
			if err != nil {
				f.Fatal(err)
			}
			c.Input = string(b)
		}
		f.Add(c.Input)
	}
	f.Add("http://h/\xff\xfe")
	f.Add("http://\xed\xa0\x80/")
	f.Fuzz(func(t *testing.T, input string) {
		u, err := Parse(input)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("Parse(%q) returned %T, want *Error", input, err)
			}
			return
		}
		_ = u.Host()
		_ = u.SearchParamNames()
		v, err := Parse(u.Href)
		if err != nil {
			t.Fatalf("Parse(%q).Href = %q, which does not parse: %v", input, u.Href, err)
		}
		if *v != *u {
			t.Fatalf("Parse(%q) = %+v, but its href parses to %+v", input, *u, *v)
		}
	})
}
