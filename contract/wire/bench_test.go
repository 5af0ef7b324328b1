package wire_test

import (
	"encoding/base64"
	"testing"

	"github.com/agentrt/agentrt/contract/wire"
)

// benchEvent is a text delta as the scripted provider emits it.
const benchEvent = `{"data":{"delta":"Hello."},"id":"scripted-env-1-t1-e2","normalized":{"type":"message.part.updated","delta":"Hello.","part":{"id":"text-1","messageID":"scripted-env-1-m1","sessionID":"scripted-env-1","text":"Hello.","type":"text"}},"type":"message.part.updated"}`

// BenchmarkFrameEvent is the per-event encoding of a stream: marshal then
// frame (a copy of the data) against AppendSSEJSON into a reused buffer.
func BenchmarkFrameEvent(b *testing.B) {
	ev, err := wire.ParseEnvironmentEvent([]byte(benchEvent))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("marshal-then-frame", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			data, err := wire.Marshal(ev)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := wire.AppendSSE(nil, int64(i+1), "", data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("in-place", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for i := range b.N {
			if buf, err = wire.AppendSSEJSON(buf[:0], int64(i+1), ev); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// AppendSSEJSON frames exactly what Marshal then AppendSSE frame, and
// refuses an id a frame cannot carry without touching the buffer.
func TestAppendSSEJSON(t *testing.T) {
	ev, err := wire.ParseEnvironmentEvent([]byte(benchEvent))
	if err != nil {
		t.Fatal(err)
	}
	data, err := wire.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	want, err := wire.AppendSSE([]byte("prefix"), 7, "", data)
	if err != nil {
		t.Fatal(err)
	}
	got, err := wire.AppendSSEJSON([]byte("prefix"), 7, ev)
	if err != nil || string(got) != string(want) {
		t.Fatalf("AppendSSEJSON = %q, %v; want %q", got, err, want)
	}
	wantID, err := wire.AppendSSEID([]byte("prefix"), *ev.ID, "", data)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := wire.AppendSSEJSONID([]byte("prefix"), *ev.ID, ev); err != nil || string(got) != string(wantID) {
		t.Fatalf("AppendSSEJSONID = %q, %v; want %q", got, err, wantID)
	}
	if got, err := wire.AppendSSEJSONID([]byte("prefix"), "a\nb", ev); err == nil || string(got) != "prefix" {
		t.Fatalf("a bad id: %q, %v", got, err)
	}
	if got, err := wire.AppendSSEJSON([]byte("prefix"), 1, func() {}); err == nil || string(got) != "prefix" {
		t.Fatalf("a value with no JSON form: %q, %v", got, err)
	}
}

// BenchmarkParseExactOutputChunk is the client's cost per output answer:
// a 64 KiB chunk of process output, strictly decoded.
func BenchmarkParseExactOutputChunk(b *testing.B) {
	raw := make([]byte, 64<<10)
	for i := range raw {
		raw[i] = byte(i)
	}
	body, err := wire.Marshal(wire.ExactOutputChunk{Offset: 0, Data: base64.StdEncoding.EncodeToString(raw), End: false})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := wire.ParseExactOutputChunk(body); err != nil {
			b.Fatal(err)
		}
	}
}
