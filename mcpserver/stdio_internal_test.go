package mcpserver

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFilterLines: over-long lines (also longer than the read buffer),
// blank lines, CRLF endings and a last line without a newline.
func TestFilterLines(t *testing.T) {
	const limit = 128
	ok := `{"jsonrpc":"2.0","method":"a"}`
	long := `{"jsonrpc":"2.0","method":"` + strings.Repeat("x", 200<<10) + `"}`
	in := strings.Join([]string{ok, "", "   ", long, ok + "\r", "nope", ok}, "\n") // the last line has no newline
	pr, pw := io.Pipe()
	var out bytes.Buffer
	go filterLines(strings.NewReader(in), pw, &out, limit)
	passed, err := io.ReadAll(pr)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(strings.Repeat(ok+"\n", 3), string(passed)); diff != "" {
		t.Errorf("passed (-want +got):\n%s", diff)
	}
	want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: the line is longer than 128 bytes"}}` + "\n" +
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: the line is not JSON"}}` + "\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("answered (-want +got):\n%s", diff)
	}
}
