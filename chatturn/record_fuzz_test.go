package chatturn

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
)

// A recorded line read back (lineFromValue, the decoder of what a
// durable turn recorded, eventId included) never panics: it is a line or
// a clear error, and a line it reads is recorded again unchanged.
func FuzzRecordedLine(f *testing.F) {
	f.Add(`{"type":"text","data":{"delta":"a"},"eventId":"7"}`)
	f.Add(`{"type":"session.run.restarted","data":{"attempt":2,"sessionId":"s"}}`)
	f.Add(`{"type":"","eventId":3}`)
	f.Add(`{"eventId":"x"}`)
	f.Add(`[1,2]`)
	f.Fuzz(func(t *testing.T, s string) {
		v, err := canonjson.Decode([]byte(s))
		if err != nil {
			return
		}
		l, err := lineFromValue(v)
		if err != nil {
			return
		}
		again, err := lineFromValue(l.recorded())
		if err != nil {
			t.Fatalf("a line read from %s does not read back: %v", s, err)
		}
		if diff := cmp.Diff(canonjson.Marshal(l.recorded()), canonjson.Marshal(again.recorded())); diff != "" || again.EventID != l.EventID {
			t.Fatalf("round trip of %s (-first +second):\n%s", s, diff)
		}
	})
}
