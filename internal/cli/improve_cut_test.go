package cli

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestCutAtSpace: --share-outputs cuts a long output before a space, so
// no word — and no secret the scrubber would recognise whole — is cut in
// two, and never inside a UTF-8 sequence.
func TestCutAtSpace(t *testing.T) {
	tests := []struct {
		name, in string
		n        int
		want     string
	}{
		{"short", "a b", 10, "a b"},
		{"exact", "abc def", 7, "abc def"},
		{"cut before the last word", "abc def ghi", 9, "abc def …"},
		{"cut at a space boundary", "abc def ghi", 8, "abc def …"},
		{"one long word", strings.Repeat("x", 20), 10, "…"},
		{"runes", "héllo wörld ünïcode", 14, "héllo wörld …"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := cutAtSpace(tt.in, tt.n)
			if got != tt.want || !utf8.ValidString(got) {
				t.Errorf("cutAtSpace(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
			}
		})
	}
}
