package coordmcp

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"syscall"

	"github.com/agentrt/agentrt/canonjson"
)

// EndpointFile is the file, in a run directory, where a live run
// publishes its coordination endpoint (mode 0600; removed at run end).
const EndpointFile = "coordination-endpoint.json"

// MaxEndpointBytes bounds the endpoint file a reader accepts.
const MaxEndpointBytes = 4 << 10

// EndpointSchemaVersion is the endpoint file's schema version.
const EndpointSchemaVersion = 1

// Endpoint is how to reach a live run's coordination verbs: a streamable
// HTTP MCP endpoint on loopback and the per-run bearer token it requires.
// The token is a secret: it lives only in the run dir's 0600 file and in
// memory, never in logs, events or receipts.
type Endpoint struct {
	SchemaVersion int    `json:"schemaVersion"`
	RunID         string `json:"runId"`
	URL           string `json:"url"`
	Token         string `json:"token"`
	// PID is the supervising process's id, for people reading the file.
	PID int `json:"pid"`
}

// ErrNotLive matches every error that says a run dir has no live
// coordination endpoint: the run is not running (never started, ended,
// or its process died) or its endpoint refused the token.
var ErrNotLive = errors.New("coordmcp: the run is not live")

// EndpointError reports an endpoint file that cannot be used. It matches
// ErrNotLive when the file is missing.
type EndpointError struct {
	// Path is the endpoint file's path.
	Path string
	// Pointer is the JSON pointer of the offending value ("" for the
	// whole file).
	Pointer string
	// Reason says what is wrong, for people.
	Reason string
	// Err is the underlying error, if any.
	Err error
}

// Error names the file, the value and the reason.
func (e *EndpointError) Error() string {
	at := ""
	if e.Pointer != "" {
		at = " at " + e.Pointer
	}
	return fmt.Sprintf("coordmcp: endpoint file %s%s: %s", e.Path, at, e.Reason)
}

// Unwrap returns the underlying error.
func (e *EndpointError) Unwrap() error { return e.Err }

// Is matches ErrNotLive for a missing file.
func (e *EndpointError) Is(target error) bool {
	return target == ErrNotLive && errors.Is(e.Err, fs.ErrNotExist)
}

// DecodeEndpoint decodes an endpoint file strictly: canonical JSON,
// every member present and no other, schema version 1, a loopback http
// URL and a token of 32 to 256 printable ASCII characters. Errors are
// *EndpointError with the JSON pointer of the bad value (Path empty).
func DecodeEndpoint(data []byte) (Endpoint, error) {
	if len(data) > MaxEndpointBytes {
		return Endpoint{}, &EndpointError{Reason: fmt.Sprintf("larger than %d bytes", MaxEndpointBytes)}
	}
	v, err := canonjson.Decode(data)
	if err != nil {
		var de *canonjson.DecodeError
		ptr := ""
		if errors.As(err, &de) {
			ptr = de.Pointer
		}
		return Endpoint{}, &EndpointError{Pointer: ptr, Reason: err.Error(), Err: err}
	}
	var e Endpoint
	if err := canonjson.FromValue(v, &e); err != nil {
		var ue *canonjson.UnmarshalError
		ptr := ""
		if errors.As(err, &ue) {
			ptr = ue.Pointer
		}
		return Endpoint{}, &EndpointError{Pointer: ptr, Reason: err.Error(), Err: err}
	}
	if err := e.check(); err != nil {
		return Endpoint{}, err
	}
	return e, nil
}

// check validates a decoded or new endpoint.
func (e Endpoint) check() error {
	bad := func(ptr, reason string) error { return &EndpointError{Pointer: ptr, Reason: reason} }
	if e.SchemaVersion != EndpointSchemaVersion {
		return bad("/schemaVersion", fmt.Sprintf("schema version %d, want %d", e.SchemaVersion, EndpointSchemaVersion))
	}
	if e.RunID == "" || len(e.RunID) > 256 {
		return bad("/runId", "a run id has 1 to 256 bytes")
	}
	u, err := url.Parse(e.URL)
	if err != nil || u.Scheme != "http" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || !isLoopbackHost(u.Hostname()) {
		return bad("/url", "not an http URL on a loopback address")
	}
	if len(e.Token) < 32 || len(e.Token) > 256 {
		return bad("/token", "a token has 32 to 256 characters")
	}
	for i := 0; i < len(e.Token); i++ {
		if c := e.Token[i]; c <= ' ' || c > '~' {
			return bad("/token", "a token is printable ASCII without spaces")
		}
	}
	if e.PID < 0 {
		return bad("/pid", "a process id is not negative")
	}
	return nil
}

// isLoopbackHost reports whether host is 127.0.0.1, ::1 or localhost.
func isLoopbackHost(host string) bool {
	return host == "127.0.0.1" || host == "::1" || host == "localhost"
}

// ReadEndpoint reads the endpoint file of runDir (runDir itself may be
// reached through a symbolic link). A missing file is an *EndpointError
// matching ErrNotLive. The file is trusted only as the supervising
// process publishes it — a regular file, not a symbolic link, owned by
// this user, mode 0600 (on unix) — since the relay sends the harness's
// calls to the URL it names; any other is an *EndpointError saying why,
// as is one that does not decode.
func ReadEndpoint(runDir string) (Endpoint, error) {
	path := filepath.Join(runDir, EndpointFile)
	f, err := os.OpenFile(path, openFlags, 0)
	if err != nil {
		reason := "cannot be read"
		switch {
		case errors.Is(err, fs.ErrNotExist):
			reason = "does not exist: the run is not live (it has not started, has ended, or serves no coordination endpoint)"
		case errors.Is(err, syscall.ELOOP):
			reason = "is a symbolic link: the supervising process writes a regular file"
		}
		return Endpoint{}, &EndpointError{Path: path, Reason: reason, Err: err}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Endpoint{}, &EndpointError{Path: path, Reason: "cannot be read", Err: err}
	}
	if why := untrusted(fi); why != "" {
		return Endpoint{}, &EndpointError{Path: path, Reason: why}
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxEndpointBytes+1))
	if err != nil {
		return Endpoint{}, &EndpointError{Path: path, Reason: "cannot be read", Err: err}
	}
	e, err := DecodeEndpoint(data)
	if err != nil {
		var ee *EndpointError
		if errors.As(err, &ee) {
			ee.Path = path
		}
		return Endpoint{}, err
	}
	return e, nil
}

// writeEndpoint publishes e in runDir atomically, mode 0600.
func writeEndpoint(runDir string, e Endpoint) (string, error) {
	if err := e.check(); err != nil {
		return "", err
	}
	v, err := canonjson.ToValue(e)
	if err != nil {
		return "", err
	}
	data, err := canonjson.Canonical(v)
	if err != nil {
		return "", err
	}
	path := filepath.Join(runDir, EndpointFile)
	tmp, err := os.CreateTemp(runDir, ".endpoint-*.tmp")
	if err != nil {
		return "", fmt.Errorf("coordmcp: publishing the endpoint: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return "", fmt.Errorf("coordmcp: publishing the endpoint: %w", err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return "", fmt.Errorf("coordmcp: publishing the endpoint: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return "", fmt.Errorf("coordmcp: publishing the endpoint: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("coordmcp: publishing the endpoint: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", fmt.Errorf("coordmcp: publishing the endpoint: %w", err)
	}
	syncDir(runDir)
	return path, nil
}

// newToken returns a fresh 256-bit bearer token, hex-encoded.
func newToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}
