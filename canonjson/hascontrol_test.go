package canonjson_test

import (
	"testing"

	"github.com/agentrt/agentrt/canonjson"
)

func hasControlByteByByte(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7F {
			return true
		}
	}
	return false
}

// Every byte value at every position of the word-at-a-time scan and of
// its tail, next to neighbours that could borrow into it.
func TestHasControlEveryByteEveryPosition(t *testing.T) {
	for _, fill := range []byte{'a', 0x80, 0xFF, 0x20, 0x7E, 0x21} {
		for n := 0; n <= 19; n++ {
			for pos := 0; pos < n; pos++ {
				for c := 0; c < 256; c++ {
					b := make([]byte, 0, n)
					for range n {
						b = append(b, fill)
					}
					b[pos] = byte(c)
					s := string(b)
					if got, want := canonjson.HasControl(s), hasControlByteByByte(s); got != want {
						t.Fatalf("HasControl(%q) = %v, want %v", s, got, want)
					}
				}
			}
		}
	}
}

func FuzzHasControl(f *testing.F) {
	for _, s := range []string{"", "abc", "abcdefgh\x7f", "\x1f", "ééééééé\x00", "plain ascii text, long enough"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := canonjson.HasControl(s), hasControlByteByByte(s); got != want {
			t.Fatalf("HasControl(%q) = %v, want %v", s, got, want)
		}
	})
}
