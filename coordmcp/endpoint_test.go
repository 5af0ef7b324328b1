package coordmcp_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/coordmcp"
)

const goodToken = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func endpointDoc(url, token string) string {
	return `{"pid":7,"runId":"run1","schemaVersion":1,"token":"` + token + `","url":"` + url + `"}`
}

// DecodeEndpoint is strict: every refusal is an *EndpointError with the
// JSON pointer of the bad value.
func TestDecodeEndpoint(t *testing.T) {
	tests := []struct {
		name, doc, pointer string
	}{
		{"valid", endpointDoc("http://127.0.0.1:4000/mcp", goodToken), ""},
		{"valid ipv6", endpointDoc("http://[::1]:4000/mcp", goodToken), ""},
		{"not json", `{"pid":`, ""},
		{"unknown member", `{"extra":1,"pid":7,"runId":"run1","schemaVersion":1,"token":"` + goodToken + `","url":"http://127.0.0.1:1/mcp"}`, ""},
		{"missing token", `{"pid":7,"runId":"run1","schemaVersion":1,"url":"http://127.0.0.1:1/mcp"}`, ""},
		{"wrong type", `{"pid":"7","runId":"run1","schemaVersion":1,"token":"` + goodToken + `","url":"http://127.0.0.1:1/mcp"}`, "/pid"},
		{"schema version", strings.Replace(endpointDoc("http://127.0.0.1:1/mcp", goodToken), `"schemaVersion":1`, `"schemaVersion":2`, 1), "/schemaVersion"},
		{"remote host", endpointDoc("http://example.com:1/mcp", goodToken), "/url"},
		{"https", endpointDoc("https://127.0.0.1:1/mcp", goodToken), "/url"},
		{"credentials in url", endpointDoc("http://u:p@127.0.0.1:1/mcp", goodToken), "/url"},
		{"short token", endpointDoc("http://127.0.0.1:1/mcp", "abc"), "/token"},
		{"token with space", endpointDoc("http://127.0.0.1:1/mcp", strings.Repeat("a b", 20)), "/token"},
		{"empty run id", strings.Replace(endpointDoc("http://127.0.0.1:1/mcp", goodToken), `"runId":"run1"`, `"runId":""`, 1), "/runId"},
		{"too large", strings.Repeat(" ", coordmcp.MaxEndpointBytes+1), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, err := coordmcp.DecodeEndpoint([]byte(tc.doc))
			if tc.name == "valid" || tc.name == "valid ipv6" {
				if err != nil || e.RunID != "run1" || e.Token != goodToken || e.PID != 7 {
					t.Fatalf("DecodeEndpoint: %+v, %v", e, err)
				}
				return
			}
			var ee *coordmcp.EndpointError
			if !errors.As(err, &ee) {
				t.Fatalf("DecodeEndpoint: %v, want an *EndpointError", err)
			}
			if tc.pointer != "" && ee.Pointer != tc.pointer {
				t.Errorf("pointer %q, want %q (%v)", ee.Pointer, tc.pointer, err)
			}
			if strings.Contains(err.Error(), goodToken) {
				t.Error("the error repeats the token")
			}
		})
	}
}

// ReadEndpoint: a missing file matches ErrNotLive; a bad one names the
// file.
func TestReadEndpoint(t *testing.T) {
	dir := t.TempDir()
	if _, err := coordmcp.ReadEndpoint(dir); !errors.Is(err, coordmcp.ErrNotLive) {
		t.Errorf("no file: %v, want ErrNotLive", err)
	}
	path := filepath.Join(dir, coordmcp.EndpointFile)
	if err := os.WriteFile(path, []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := coordmcp.ReadEndpoint(dir)
	var ee *coordmcp.EndpointError
	if !errors.As(err, &ee) || ee.Path != path || errors.Is(err, coordmcp.ErrNotLive) {
		t.Errorf("a bad file: %v", err)
	}
}

// FuzzDecodeEndpoint: no input panics, and what decodes is a loopback
// http URL with a well-formed token.
func FuzzDecodeEndpoint(f *testing.F) {
	f.Add([]byte(endpointDoc("http://127.0.0.1:4000/mcp", goodToken)))
	f.Add([]byte(endpointDoc("http://[::1]:4000/mcp", goodToken)))
	f.Add([]byte(`{"pid":-1}`))
	f.Add([]byte(`[]`))
	f.Add([]byte("\xff"))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := coordmcp.DecodeEndpoint(data)
		if err != nil {
			var ee *coordmcp.EndpointError
			if !errors.As(err, &ee) {
				t.Fatalf("an error that is not an *EndpointError: %v", err)
			}
			return
		}
		if !strings.HasPrefix(e.URL, "http://") || len(e.Token) < 32 || e.SchemaVersion != 1 {
			t.Fatalf("accepted %+v", e)
		}
	})
}
