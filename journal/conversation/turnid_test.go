package conversation_test

import (
	"testing"

	"github.com/agentrt/agentrt/journal/conversation"
)

// The slugs are those of the reference's slugifySpeaker (String.normalize
// NFKD, /[^\w-]+/ → "-", dashes collapsed and trimmed, lower-cased),
// computed with Node.js; turn ids must agree so that a retried turn
// collides with the reference's (spec §4: deterministic turn ids).
func TestSpeakerSlugMatchesReference(t *testing.T) {
	cases := []struct{ speaker, want string }{
		{"Researcher", "researcher"},
		{"José Ramírez (critic)", "jose-rami-rez-critic"},
		{"  --Hello, World!--  ", "hello-world"},
		{"", "anon"},
		{"🙂", "anon"},
		{"a_b", "a_b"},
		{"ÅNGSTRÖM", "a-ngstro-m"},
		{"ﬁle", "file"},
		{"Ⅻ", "xii"},
		{"-", "anon"},
		{"--x--", "x"},
		{"_", "_"},
		{"a--b", "a-b"},
		{"Straße", "stra-e"},
		{"İstanbul", "i-stanbul"},
		{"ǅemal", "dz-emal"},
		{"①②", "12"},
		{"Ｆｕｌｌ", "full"},
		{"x\x00y", "x-y"},
		{"a\xed\xa0\x80b", "a-b"}, // a lone surrogate, as canonjson keeps it
		{"日本語 name", "name"},
	}
	for _, c := range cases {
		if got := conversation.SpeakerSlug(c.speaker); got != c.want {
			t.Errorf("SpeakerSlug(%q) = %q, want %q", c.speaker, got, c.want)
		}
	}
}

func TestTurnID(t *testing.T) {
	cases := []struct {
		runID   string
		index   int
		speaker string
		want    string
	}{
		{"run_abc", 0, "Researcher", "run_abc.t0.researcher"},
		{"run_abc", 17, "Critic Bot", "run_abc.t17.critic-bot"},
		{"conv_1", 3, "🙂", "conv_1.t3.anon"},
	}
	for _, c := range cases {
		if got := conversation.TurnID(c.runID, c.index, c.speaker); got != c.want {
			t.Errorf("TurnID(%q, %d, %q) = %q, want %q", c.runID, c.index, c.speaker, got, c.want)
		}
	}
}
