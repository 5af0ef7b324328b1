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

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/kernel"
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
			reply(out, nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("Invalid Request: the line is longer than %d bytes", limit))
		} else if msg := bytes.TrimSpace(line); len(msg) > 0 {
			if code, why := checkLine(msg); code != 0 {
				answer(out, msg, code, why)
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

// maxPointerBytes bounds the JSON pointer a refusal of too deep
// arguments names (a longer one is clipped, marked with "…").
const maxPointerBytes = 1024

// maxMessageDepth is the nesting depth of a whole JSON-RPC message the
// SDK decodes (its internal decoder's bound); a tools/call's arguments
// object sits at depth 3 (message, params, arguments).
const maxMessageDepth = 1000

// answer replies to msg, a JSON line the SDK would refuse. When msg is a
// request whose id can be read (encoding/json reads deeper than the SDK,
// and the line is valid JSON), the reply carries that id, so the client
// can match it to its call: a tools/call is answered with a tool result
// {error: invalid_arguments, reason} naming where its arguments nest too
// deep, as a call the tool refused; another request with the error.
// Otherwise the reply is the error with a null id.
func answer(out io.Writer, msg []byte, code int64, why string) {
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Arguments json.RawMessage `json:"arguments"`
		} `json:"params"`
	}
	if code != jsonrpc.CodeInvalidRequest || json.Unmarshal(msg, &req) != nil || req.Method == "" || !validID(req.ID) {
		reply(out, nil, code, why)
		return
	}
	if req.Method != "tools/call" {
		reply(out, req.ID, code, why)
		return
	}
	reason := "the arguments cannot be read: " + why
	if len(req.Params.Arguments) > 0 {
		_, err := canonjson.DecodeWith(req.Params.Arguments, canonjson.DecodeOptions{MaxDepth: maxMessageDepth - 2})
		if de, ok := errors.AsType[*canonjson.DecodeError](err); ok {
			reason = fmt.Sprintf("the arguments at %s are refused: %s (a call's message nests at most %d levels)", clip(de.Pointer, maxPointerBytes), de.Message, maxMessageDepth)
		}
	}
	res, err := json.Marshal(failed(Outcome{Error: kernel.CodeInvalidArguments, Reason: reason}))
	if err != nil {
		reply(out, req.ID, code, why)
		return
	}
	write(out, struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result"`
	}{JSONRPC: "2.0", ID: req.ID, Result: res})
}

// validID reports whether id is a JSON-RPC request id: a string or a
// number.
func validID(id json.RawMessage) bool {
	var v any
	if json.Unmarshal(id, &v) != nil {
		return false
	}
	switch v.(type) {
	case string, float64:
		return true
	}
	return false
}

// reply writes one JSON-RPC error response; a nil id is null.
func reply(out io.Writer, id json.RawMessage, code int64, message string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	write(out, struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: jsonrpc.Error{Code: code, Message: message}})
}

// write writes v as one line.
func write(out io.Writer, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	out.Write(append(b, '\n'))
}
