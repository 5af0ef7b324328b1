package wire_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/wire"
	"github.com/agentrt/agentrt/schema"
)

func TestParseTurnRequestStrict(t *testing.T) {
	good := `{"turnId":"t1","input":{"prompt":"hi"}}`
	req, err := wire.ParseTurnRequest([]byte(good))
	if err != nil || req.TurnID != "t1" || req.Input.Prompt == nil || *req.Input.Prompt != "hi" {
		t.Fatalf("ParseTurnRequest(%s) = %+v, %v", good, req, err)
	}
	for _, tc := range []struct{ body, path string }{
		{`{"turnId":"t1","input":{"prompt":"hi","bogus":1}}`, "/input"},
		{`{"turnId":"t1","input":{"prompt":7}}`, "/input/prompt"},
		{`{"input":{}}`, "/turnId"},
		{`{"turnId":"t1","input":{}} trailing`, ""},
	} {
		_, err := wire.ParseTurnRequest([]byte(tc.body))
		var se *schema.Error
		if !errors.As(err, &se) {
			t.Errorf("%s: error %v is not a *schema.Error", tc.body, err)
			continue
		}
		if d := wire.FromSchemaError(err); d.Path == nil || *d.Path != tc.path || d.Code != wire.CodeInvalidRequest {
			t.Errorf("%s: detail %+v, want path %q", tc.body, d, tc.path)
		}
	}
}

func TestParseRefusesOversizedBody(t *testing.T) {
	big := `{"operationId":"` + strings.Repeat("x", wire.MaxBodyBytes) + `"}`
	_, err := wire.ParseCancelRequest([]byte(big))
	if d := wire.FromSchemaError(err); d.Code != wire.CodeTooLarge || wire.Status(d.Code) != 413 {
		t.Fatalf("oversized body: %+v", d)
	}
}

func TestSSERoundTrip(t *testing.T) {
	var b []byte
	var err error
	for i, data := range []string{`{"a":1}`, `{"b":2}`} {
		if b, err = wire.AppendSSE(b, int64(i+1), "", []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	b = append(b, ": keep-alive\n\n"...)
	if b, err = wire.AppendSSE(b, 0, wire.EventEnd, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	r := wire.NewSSEReader(bytes.NewReader(b))
	want := []wire.SSEEvent{{ID: "1", Data: []byte(`{"a":1}`)}, {ID: "2", Data: []byte(`{"b":2}`)}, {Event: wire.EventEnd, Data: []byte(`{}`)}}
	for _, w := range want {
		got, err := r.Next()
		if err != nil || got.ID != w.ID || got.Event != w.Event || !bytes.Equal(got.Data, w.Data) {
			t.Fatalf("Next = %+v, %v; want %+v", got, err, w)
		}
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("after the last event: %v, want io.EOF", err)
	}
	if _, err := wire.AppendSSE(nil, 1, "", []byte("a\nb")); err == nil {
		t.Fatal("data with a newline was framed")
	}
}

func TestSSEReaderCutAndLimit(t *testing.T) {
	r := wire.NewSSEReader(strings.NewReader("id: 1\ndata: {\"a\""))
	if _, err := r.Next(); err != io.ErrUnexpectedEOF {
		t.Fatalf("cut stream: %v, want io.ErrUnexpectedEOF", err)
	}
	r = wire.NewSSEReader(strings.NewReader("data: " + strings.Repeat("x", wire.MaxBodyBytes+100) + "\n\n"))
	if _, err := r.Next(); !errors.Is(err, wire.ErrSSETooLarge) {
		t.Fatalf("oversized event: %v, want ErrSSETooLarge", err)
	}
}

func TestErrorMapsContractSentinels(t *testing.T) {
	err := error(&wire.Error{Status: 409, ErrorDetail: wire.ErrorDetail{Code: wire.CodeIdempotencyConflict, Message: "x"}})
	if !errors.Is(err, contract.ErrIdempotencyConflict) {
		t.Error("idempotency_conflict does not match contract.ErrIdempotencyConflict")
	}
	if errors.Is(err, contract.ErrUnsupported) {
		t.Error("idempotency_conflict matches contract.ErrUnsupported")
	}
}

func TestParseEventID(t *testing.T) {
	for s, ok := range map[string]bool{"0": true, "17": true, "-1": false, "01": false, "x": false, "": false} {
		if _, err := wire.ParseEventID(s); (err == nil) != ok {
			t.Errorf("ParseEventID(%q): %v", s, err)
		}
	}
}

// The workspace and profile-validation decoders are strict: an unknown or
// missing member is refused with its JSON-pointer path, and an exec
// answer without an exit status is never read as success.
func TestWorkspaceDecodersStrict(t *testing.T) {
	for _, c := range []struct {
		name  string
		parse func([]byte) (any, error)
		body  string
		path  string
	}{
		{"read unknown", func(b []byte) (any, error) { return wire.ParseReadFileRequest(b) }, `{"path":"a","extra":1}`, ""},
		{"read empty path", func(b []byte) (any, error) { return wire.ParseReadFileRequest(b) }, `{"path":""}`, "/path"},
		{"write no content", func(b []byte) (any, error) { return wire.ParseWriteFileRequest(b) }, `{"path":"a"}`, "/content"},
		{"exec bad timeout", func(b []byte) (any, error) { return wire.ParseExecRequest(b) }, `{"command":"x","options":{"timeoutMs":-1}}`, "/options/timeoutMs"},
		{"exec unknown option", func(b []byte) (any, error) { return wire.ParseExecRequest(b) }, `{"command":"x","options":{"signal":1}}`, "/options"},
		{"exec result no exit", func(b []byte) (any, error) { return wire.ParseExecResult(b) }, `{"stdout":"","stderr":""}`, "/exitCode"},
		{"validate bad profile", func(b []byte) (any, error) { return wire.ParseProfileValidationRequest(b) }, `{"profile":7}`, "/profile"},
		{"validation bad level", func(b []byte) (any, error) { return wire.ParseProfileValidation(b) }, `{"ok":true,"issues":[{"level":"fatal","code":"c","message":"m"}]}`, "/issues/0/level"},
	} {
		_, err := c.parse([]byte(c.body))
		if err == nil {
			t.Errorf("%s: %s accepted", c.name, c.body)
			continue
		}
		if d := wire.FromSchemaError(err); d.Path == nil || *d.Path != c.path {
			t.Errorf("%s: refused at %v, want %s (%v)", c.name, d.Path, c.path, err)
		}
	}
	big := `{"path":"a","content":"` + strings.Repeat("x", wire.MaxBodyBytes) + `"}`
	if _, err := wire.ParseWriteFileRequest([]byte(big)); err == nil || wire.FromSchemaError(err).Code != wire.CodeTooLarge {
		t.Errorf("a write over the body limit: %v", err)
	}
}
