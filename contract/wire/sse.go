package wire

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/agentrt/agentrt/canonjson"
)

// SSEEvent is one server-sent event as framed on the wire.
type SSEEvent struct {
	// ID is the event's id line ("" when it had none).
	ID string
	// Event is its event name ("" for a plain message).
	Event string
	// Data is its data, lines joined by "\n".
	Data []byte
}

// AppendSSE appends one event frame to b. data must not contain a
// newline (compact JSON never does); a newline is refused so a frame can
// never be split into two.
func AppendSSE(b []byte, id int64, event string, data []byte) ([]byte, error) {
	if bytes.ContainsAny(data, "\r\n") || strings.ContainsAny(event, "\r\n") {
		return b, errSSELineBreak
	}
	if id > 0 {
		b = append(b, "id: "...)
		b = strconv.AppendInt(b, id, 10)
		b = append(b, '\n')
	}
	if event != "" {
		b = append(b, "event: "...)
		b = append(b, event...)
		b = append(b, '\n')
	}
	b = append(b, "data: "...)
	b = append(b, data...)
	return append(b, '\n', '\n'), nil
}

var errSSELineBreak = errors.New("sse: an event's data or name contains a line break")

// ErrSSETooLarge is returned by SSEReader.Next for an event whose data
// exceeds MaxBodyBytes.
var ErrSSETooLarge = errors.New("sse: event larger than the limit")

// SSEReader reads server-sent events, each bounded by MaxBodyBytes.
// Lines end in "\r\n", "\n" or a bare "\r", as the event-stream grammar
// allows, and a leading byte-order mark is skipped.
type SSEReader struct {
	r *bufio.Reader
	// crPending: the last line ended in "\r", so a "\n" read next is
	// the rest of its "\r\n", not an empty line. It is settled lazily,
	// at the next read, so an event ending in "\r\r" is returned
	// without waiting for a byte that may be long in coming.
	crPending bool
	// started: the leading byte-order mark was checked.
	started bool
}

// NewSSEReader reads events from r.
func NewSSEReader(r io.Reader) *SSEReader {
	return &SSEReader{r: bufio.NewReaderSize(r, 64<<10)}
}

// maxLine bounds one line: a data line of MaxBodyBytes plus its field name.
const maxLine = MaxBodyBytes + 64

// bom is the UTF-8 byte-order mark a stream may start with.
const bom = "\xef\xbb\xbf"

// line reads one line without its terminator, refusing one over
// maxLine. Each buffered byte is scanned once, so a line costs time
// linear in its length however it arrives.
func (s *SSEReader) line() ([]byte, error) {
	if err := s.settle(); err != nil {
		return nil, err
	}
	var out []byte
	for {
		if _, err := s.r.Peek(1); err != nil {
			if err == io.EOF && len(out) > 0 {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
		buf, _ := s.r.Peek(s.r.Buffered())
		end := bytes.IndexByte(buf, '\n')
		if end < 0 {
			end = len(buf)
		}
		if cr := bytes.IndexByte(buf[:end], '\r'); cr >= 0 {
			end = cr
		}
		if len(out)+end > maxLine {
			return nil, ErrSSETooLarge
		}
		out = append(out, buf[:end]...)
		if end == len(buf) {
			_, _ = s.r.Discard(end)
			continue
		}
		s.crPending = buf[end] == '\r'
		_, _ = s.r.Discard(end + 1)
		return out, nil
	}
}

// settle consumes what the previous line left open: the "\n" of a
// "\r\n" split across reads, and a byte-order mark at the start.
func (s *SSEReader) settle() error {
	if s.crPending {
		b, err := s.r.Peek(1)
		if err != nil {
			return err
		}
		s.crPending = false
		if b[0] == '\n' {
			_, _ = s.r.Discard(1)
		}
	}
	if !s.started {
		// A mark is three bytes; peeking for it cannot hold back an
		// event, which takes at least four ("id\n\n").
		b, err := s.r.Peek(len(bom))
		if err != nil && err != io.EOF {
			return err
		}
		s.started = true
		if string(b) == bom {
			_, _ = s.r.Discard(len(bom))
		}
	}
	return nil
}

// Next returns the next event. Comment lines (":" keep-alives) and
// unknown fields are skipped. At a clean end of stream between events it
// returns io.EOF; a stream cut inside an event is io.ErrUnexpectedEOF.
func (s *SSEReader) Next() (SSEEvent, error) {
	var ev SSEEvent
	started, hasData := false, false
	for {
		ln, err := s.line()
		if err != nil {
			if err == io.EOF && started {
				return SSEEvent{}, io.ErrUnexpectedEOF
			}
			return SSEEvent{}, err
		}
		if len(ln) == 0 {
			if started {
				return ev, nil
			}
			continue
		}
		if ln[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(ln, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "id":
			started = true
			ev.ID = string(value)
		case "event":
			started = true
			ev.Event = string(value)
		case "data":
			if hasData {
				ev.Data = append(ev.Data, '\n')
			}
			started, hasData = true, true
			if len(ev.Data)+len(value) > MaxBodyBytes {
				return SSEEvent{}, ErrSSETooLarge
			}
			ev.Data = append(ev.Data, value...)
		}
	}
}

// ParseEventID parses an SSE id (or Last-Event-ID) as an event sequence
// number: a positive decimal integer.
func ParseEventID(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || strconv.FormatInt(n, 10) != s {
		return 0, fmt.Errorf("event id %q is not a sequence number", s)
	}
	return n, nil
}

// AppendSSEJSON appends one unnamed event frame whose data is x encoded
// as Marshal encodes it, built in place in b (no intermediate buffer):
// the per-event encoding of a stream. id > 0 is written as the id line.
// On error b is returned unchanged.
func AppendSSEJSON(b []byte, id int64, x any) ([]byte, error) {
	head := len(b)
	if id > 0 {
		b = append(b, "id: "...)
		b = strconv.AppendInt(b, id, 10)
		b = append(b, '\n')
	}
	return appendJSONData(b, head, x)
}

// AppendSSEJSONID is AppendSSEJSON with an opaque string id (a session
// event's own id; "" writes no id line). An id that is not SSEIDSafe is
// refused with ErrSSEID.
func AppendSSEJSONID(b []byte, id string, x any) ([]byte, error) {
	head := len(b)
	if id != "" {
		if !SSEIDSafe(id) {
			return b, ErrSSEID
		}
		b = append(b, "id: "...)
		b = append(b, id...)
		b = append(b, '\n')
	}
	return appendJSONData(b, head, x)
}

// appendJSONData appends the data line of x and the frame's end; on error
// it returns b cut back to head.
func appendJSONData(b []byte, head int, x any) ([]byte, error) {
	v, err := canonjson.ToValue(x)
	if err != nil {
		return b[:head], err
	}
	b = append(b, "data: "...)
	start := len(b)
	b = canonjson.AppendMarshal(b, v)
	// Marshal escapes every control character, so a line break here would
	// be a bug; the check keeps a frame from ever splitting in two.
	if bytes.IndexByte(b[start:], '\n') >= 0 || bytes.IndexByte(b[start:], '\r') >= 0 {
		return b[:head], errSSELineBreak
	}
	return append(b, '\n', '\n'), nil
}
