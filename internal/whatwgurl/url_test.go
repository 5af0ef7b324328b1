package whatwgurl

import (
	"errors"
	"slices"
	"testing"
)

// TestIllFormedInput covers inputs that no JavaScript string can hold:
// ill-formed UTF-8 and surrogates in generalized UTF-8.
func TestIllFormedInput(t *testing.T) {
	tests := []struct {
		input, href string // href "" means Parse must fail
	}{
		{"http://h/\xff", "http://h/%EF%BF%BD"},
		{"http://h/\xc3", "http://h/%EF%BF%BD"},
		{"http://h/\xc3(", "http://h/%EF%BF%BD("},
		{"http://h/\xf0\x9f\x98", "http://h/%EF%BF%BD"}, // one maximal ill-formed subsequence
		{"http://h/\xf0\x9f\x98\xf0", "http://h/%EF%BF%BD%EF%BF%BD"},
		{"http://h/\xe0\x80\x80", "http://h/%EF%BF%BD%EF%BF%BD%EF%BF%BD"}, // overlong: three
		{"http://h/\xed\xa0\x80", "http://h/%EF%BF%BD"},                   // lone high surrogate
		{"http://h/\xed\xbf\xbfx", "http://h/%EF%BF%BDx"},                 // lone low surrogate
		{"http://h/\xed\xa0\xbd\xed\xb8\x80", "http://h/%F0%9F%98%80"},    // a pair, as JavaScript would join it
		{"http://h/\xed\xb8\x80\xed\xa0\xbd", "http://h/%EF%BF%BD%EF%BF%BD"},
		{"http://h/?\xff=1#\xff", "http://h/?%EF%BF%BD=1#%EF%BF%BD"},
		{"sc://\xff/", "sc://%EF%BF%BD/"},
		{"sc:\xff", "sc:%EF%BF%BD"},
		{"http://u\xff:p\xff@h/", "http://u%EF%BF%BD:p%EF%BF%BD@h/"},
		{"http://\xff/", ""},         // U+FFFD is disallowed in domains
		{"http://\xed\xa0\x80/", ""}, // so is a lone surrogate
		{"\xffhttp://h/", ""},        // U+FFFD is not a C0 control or space
		{"http://h/\xff ", "http://h/%EF%BF%BD"},
	}
	for _, tt := range tests {
		u, err := Parse(tt.input)
		if tt.href == "" {
			if err == nil {
				t.Errorf("Parse(%q) = %q, want failure", tt.input, u.Href)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.input, err)
			continue
		}
		if u.Href != tt.href {
			t.Errorf("Parse(%q).Href = %q, want %q", tt.input, u.Href, tt.href)
		}
	}
}

func TestErrorType(t *testing.T) {
	for _, input := range []string{"", "/a", "a", "//h", "http://", "http://4294967296/", "http://[::1/", "http://h:65536/", "http://a b/"} {
		_, err := Parse(input)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("Parse(%q) error = %v, want *Error", input, err)
			continue
		}
		if e.Reason == "" || e.Error() == "" {
			t.Errorf("Parse(%q): empty reason", input)
		}
	}
}

func TestGetters(t *testing.T) {
	u, err := Parse(" HTTPS://u%20s:p@EX%41mple.com:8443/a/../b c?x=1&y+z=%C3%A9&&=v#frag ")
	if err != nil {
		t.Fatal(err)
	}
	want := URL{
		Protocol: "https:",
		Username: "u%20s",
		Password: "p",
		Hostname: "example.com",
		Port:     "8443",
		Pathname: "/b%20c",
		Search:   "?x=1&y+z=%C3%A9&&=v",
		Hash:     "#frag",
		Href:     "https://u%20s:p@example.com:8443/b%20c?x=1&y+z=%C3%A9&&=v#frag",
		query:    "x=1&y+z=%C3%A9&&=v",
	}
	if *u != want {
		t.Errorf("Parse = %+v, want %+v", *u, want)
	}
	if got := u.Host(); got != "example.com:8443" {
		t.Errorf("Host() = %q", got)
	}
	if got, want := u.SearchParamNames(), []string{"x", "y z", ""}; !slices.Equal(got, want) {
		t.Errorf("SearchParamNames() = %q, want %q", got, want)
	}

	u, err = Parse("http://0x7f.1:80/?")
	if err != nil {
		t.Fatal(err)
	}
	if u.Hostname != "127.0.0.1" || u.Port != "" || u.Host() != "127.0.0.1" || u.Search != "" || u.Href != "http://127.0.0.1/?" {
		t.Errorf("Parse(http://0x7f.1:80/?) = %+v", *u)
	}
	if got := u.SearchParamNames(); len(got) != 0 {
		t.Errorf("SearchParamNames() = %q, want none", got)
	}
}
