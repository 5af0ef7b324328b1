package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxLineBytes bounds one JSON-RPC line on the stdio transport (the
// SDK's own default): a file of up to 8 MiB, base64-encoded, fits.
const MaxLineBytes = mcp.DefaultMaxLineLength

// Stdio returns the MCP stdio transport over in and out: one JSON-RPC
// message per line. Unlike the SDK's own transports, a bad line does not
// end the session: a line that is not JSON is answered with a JSON-RPC
// parse error (-32700), JSON that is not a JSON-RPC message or a line
// longer than MaxLineBytes with an invalid request (-32600), each with a
// null id, and the next line is read (spec/runtime.md §9). Closing in
// (EOF) ends the session; out is never closed.
func Stdio(in io.Reader, out io.Writer) mcp.Transport {
	return &stdioTransport{in: in, out: out}
}

type stdioTransport struct {
	in  io.Reader
	out io.Writer
}

// Connect starts the line filter and returns the SDK's newline-delimited
// connection over it. Call it once.
func (t *stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	w := &lockedWriter{w: t.out}
	pr, pw := io.Pipe()
	go filterLines(t.in, pw, w, MaxLineBytes)
	return (&mcp.IOTransport{Reader: pr, Writer: w, MaxLineLength: -1}).Connect(ctx)
}

// lockedWriter serializes whole-message writes of the SDK and of the
// filter's error replies; its Close leaves the writer open.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return nil }

// filterLines copies the well-formed lines of in, of at most limit
// bytes, to pw and answers the others on out. It returns at the end of
// in, or when the connection closed pw's reader.
func filterLines(in io.Reader, pw *io.PipeWriter, out io.Writer, limit int) {
	br := bufio.NewReaderSize(in, 64<<10)
	var line []byte
	tooLong := false
	for {
		chunk, err := br.ReadSlice('\n')
		switch {
		case tooLong:
		case len(line)+len(chunk) > limit:
			tooLong, line = true, line[:0]
		default:
			line = append(line, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if tooLong {
			reply(out, jsonrpc.CodeInvalidRequest, fmt.Sprintf("Invalid Request: the line is longer than %d bytes", limit))
		} else if msg := bytes.TrimSpace(line); len(msg) > 0 {
			if code, why := checkLine(msg); code != 0 {
				reply(out, code, why)
			} else if _, werr := pw.Write(append(msg, '\n')); werr != nil {
				return // the connection is closed
			}
		}
		line, tooLong = line[:0], false
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			pw.CloseWithError(err)
			return
		}
	}
}

// checkLine returns the JSON-RPC error code for a line the SDK would
// refuse by ending the session, or 0. Batches (arrays) pass through.
func checkLine(msg []byte) (code int64, why string) {
	if !json.Valid(msg) {
		return jsonrpc.CodeParseError, "Parse error: the line is not JSON"
	}
	if msg[0] == '[' {
		return 0, ""
	}
	if _, err := jsonrpc.DecodeMessage(msg); err != nil {
		return jsonrpc.CodeInvalidRequest, "Invalid Request: " + err.Error()
	}
	return 0, ""
}

// reply writes one JSON-RPC error response with a null id.
func reply(out io.Writer, code int64, message string) {
	b, err := json.Marshal(struct {
		JSONRPC string        `json:"jsonrpc"`
		ID      any           `json:"id"`
		Error   jsonrpc.Error `json:"error"`
	}{JSONRPC: "2.0", Error: jsonrpc.Error{Code: code, Message: message}})
	if err != nil {
		return
	}
	out.Write(append(b, '\n'))
}
