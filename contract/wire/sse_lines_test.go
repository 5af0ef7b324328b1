package wire_test

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/contract/wire"
)

// readAll reads every event of r until an error, which it returns.
func readAll(r *wire.SSEReader) ([]wire.SSEEvent, error) {
	var evs []wire.SSEEvent
	for {
		ev, err := r.Next()
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
}

// TestSSEReaderLineEndings: a line ends in "\r\n", "\n" or a bare "\r"
// (the event-stream grammar allows all three, and a proxy may rewrite
// one into another), a leading byte-order mark is skipped, and the
// events read are the same whether the stream arrives at once or one
// byte at a time (a "\r\n" split across two reads is one line end).
func TestSSEReaderLineEndings(t *testing.T) {
	want := []wire.SSEEvent{
		{ID: "1", Data: []byte(`{"a":1}`)},
		{Event: "end", Data: []byte("x\ny")},
	}
	frame := "id: 1\ndata: {\"a\":1}\n\nevent: end\ndata: x\ndata: y\n\n"
	cases := map[string]string{
		"lf":    frame,
		"crlf":  string(bytes.ReplaceAll([]byte(frame), []byte("\n"), []byte("\r\n"))),
		"cr":    string(bytes.ReplaceAll([]byte(frame), []byte("\n"), []byte("\r"))),
		"mixed": "id: 1\r\ndata: {\"a\":1}\r\revent: end\ndata: x\rdata: y\r\n\n",
		"bom":   "\xef\xbb\xbf" + frame,
		"comments": ": keep-alive\r\n:\r" + "id: 1\ndata: {\"a\":1}\n\n" +
			": another\n" + "event: end\ndata: x\ndata: y\n\n",
	}
	for name, stream := range cases {
		for _, chunk := range []int{1, 2, 3, 64 << 10} {
			r := wire.NewSSEReader(&dribble{r: bytes.NewReader([]byte(stream)), n: chunk})
			got, err := readAll(r)
			if err != io.EOF {
				t.Errorf("%s, %d-byte reads: ended with %v, want io.EOF", name, chunk, err)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("%s, %d-byte reads: events (-want +got):\n%s", name, chunk, d)
			}
		}
	}
}

// TestSSEReaderBareCRDoesNotWait: an event ended by "\r\r" is returned
// as soon as its bytes arrived, without waiting to learn whether a "\n"
// follows (a live stream may send nothing more for minutes).
func TestSSEReaderBareCRDoesNotWait(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	r := wire.NewSSEReader(pr)
	got := make(chan wire.SSEEvent, 1)
	go func() {
		ev, err := r.Next()
		if err == nil {
			got <- ev
		}
		close(got)
	}()
	if _, err := pw.Write([]byte("id: 7\rdata: {}\r\r")); err != nil {
		t.Fatal(err)
	}
	select {
	case ev, ok := <-got:
		if !ok || ev.ID != "7" || string(ev.Data) != "{}" {
			t.Fatalf("Next = %+v (ok %v), want id 7 data {}", ev, ok)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Next waited for a byte after the event's \\r\\r")
	}
}

// FuzzSSEReaderChunking: whatever the input, reading it one byte at a
// time gives the same events and the same kind of end as reading it at
// once, so no line end depends on where the network split the stream.
func FuzzSSEReaderChunking(f *testing.F) {
	f.Add([]byte("id: 1\r\ndata: {}\r\n\r\n"))
	f.Add([]byte("data: a\rdata: b\r\r\n\nid: 2\n\n"))
	f.Add([]byte("\xef\xbb\xbfdata: x\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		whole, werr := readAll(wire.NewSSEReader(bytes.NewReader(data)))
		bytewise, berr := readAll(wire.NewSSEReader(&dribble{r: bytes.NewReader(data), n: 1}))
		if werr != berr {
			t.Fatalf("ends differ: at once %v, byte by byte %v", werr, berr)
		}
		if d := cmp.Diff(whole, bytewise); d != "" {
			t.Fatalf("events differ (-at once +byte by byte):\n%s", d)
		}
	})
}
