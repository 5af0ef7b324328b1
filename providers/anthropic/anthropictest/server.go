package anthropictest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/tools/txtar"
)

// Exchange is one request the server expects and the response it gives.
type Exchange struct {
	// Request is the expected request body (JSON); nil is not checked.
	Request []byte
	// Status, Header and Body are the response.
	Status int
	Header http.Header
	Body   []byte
	// Action is "drop", "hang" or "" (see the package doc).
	Action string
}

// Transcript is a recorded conversation with the API.
type Transcript struct {
	Comment   string
	Exchanges []Exchange
}

// Load reads and parses the transcript at path.
func Load(path string) (*Transcript, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(data)
}

// Parse parses a transcript archive.
func Parse(data []byte) (*Transcript, error) {
	a := txtar.Parse(data)
	files := map[string][]byte{}
	for _, f := range a.Files {
		files[f.Name] = f.Data
	}
	tr := &Transcript{Comment: string(a.Comment)}
	for n := 1; ; n++ {
		resp, ok := files[strconv.Itoa(n)+"/response"]
		if !ok {
			break
		}
		ex, err := parseResponse(resp)
		if err != nil {
			return nil, fmt.Errorf("exchange %d: %w", n, err)
		}
		if req, ok := files[strconv.Itoa(n)+"/request.json"]; ok {
			if !json.Valid(req) {
				return nil, fmt.Errorf("exchange %d: request.json is not JSON", n)
			}
			ex.Request = req
		}
		tr.Exchanges = append(tr.Exchanges, ex)
	}
	if len(tr.Exchanges) == 0 {
		return nil, fmt.Errorf("the transcript has no exchange (no 1/response)")
	}
	return tr, nil
}

func parseResponse(data []byte) (Exchange, error) {
	head, body, ok := bytes.Cut(data, []byte("\n\n"))
	if !ok {
		return Exchange{}, fmt.Errorf("response has no empty line after its head")
	}
	r := textproto.NewReader(bufio.NewReader(bytes.NewReader(append(head, "\n\n"...))))
	line, err := r.ReadLine()
	if err != nil {
		return Exchange{}, err
	}
	code, ok := strings.CutPrefix(line, "HTTP ")
	if !ok {
		return Exchange{}, fmt.Errorf("response starts with %q, not HTTP <code>", line)
	}
	status, err := strconv.Atoi(code)
	if err != nil {
		return Exchange{}, fmt.Errorf("status %q: %w", code, err)
	}
	h, err := r.ReadMIMEHeader()
	if err != nil && err != io.EOF {
		return Exchange{}, err
	}
	ex := Exchange{Status: status, Header: http.Header(h), Body: body}
	ex.Action = ex.Header.Get("X-Transcript")
	ex.Header.Del("X-Transcript")
	switch ex.Action {
	case "", "drop", "hang":
	default:
		return Exchange{}, fmt.Errorf("unknown X-Transcript action %q", ex.Action)
	}
	return ex, nil
}

// Server is a local HTTP server playing one transcript: the Nth request
// gets the Nth exchange's response.
type Server struct {
	*httptest.Server
	t       testing.TB
	tr      *Transcript
	apiKey  string
	version string
	cycle   bool

	mu   sync.Mutex
	next int
}

// NewServer starts a server playing tr, expecting apiKey as every
// request's x-api-key and version as its anthropic-version. It is closed when the test ends; Close then
// reports exchanges the client never asked for.
func NewServer(t testing.TB, tr *Transcript, apiKey, version string) *Server {
	s := &Server{t: t, tr: tr, apiKey: apiKey, version: version}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// NewCyclingServer is NewServer, except that after the transcript's last
// exchange it serves the transcript again from its start (conformance
// suites, which stream an unknown number of turns); Close reports nothing
// about unplayed exchanges.
func NewCyclingServer(t testing.TB, tr *Transcript, apiKey, version string) *Server {
	s := &Server{t: t, tr: tr, apiKey: apiKey, version: version, cycle: true}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// Requests returns how many requests the server answered.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next
}

// Close shuts the server down and reports a transcript not played to its
// end.
func (s *Server) Close() {
	s.Server.Close()
	if n := s.Requests(); !s.cycle && n < len(s.tr.Exchanges) {
		s.t.Errorf("anthropictest: the client made %d requests; the transcript has %d", n, len(s.tr.Exchanges))
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	n := s.next
	s.next++
	s.mu.Unlock()
	if s.cycle {
		n %= len(s.tr.Exchanges)
	}
	if n >= len(s.tr.Exchanges) {
		s.t.Errorf("anthropictest: request %d is beyond the transcript's %d exchanges", n+1, len(s.tr.Exchanges))
		http.Error(w, "beyond the transcript", http.StatusTeapot)
		return
	}
	ex := &s.tr.Exchanges[n]
	s.check(n+1, r, ex)
	for k, vs := range ex.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(ex.Status)
	_, _ = w.Write(ex.Body)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	switch ex.Action {
	case "drop":
		panic(http.ErrAbortHandler) // the connection dies mid-response
	case "hang":
		<-r.Context().Done()
	}
}

// check compares the request with the exchange's expectation.
func (s *Server) check(n int, r *http.Request, ex *Exchange) {
	bad := func(format string, args ...any) {
		s.t.Errorf("anthropictest: request %d: "+format, append([]any{n}, args...)...)
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		bad("%s %s, want POST /v1/messages", r.Method, r.URL.Path)
	}
	if got := r.Header.Get("X-Api-Key"); got != s.apiKey {
		bad("x-api-key is not the test's key")
	}
	if got := r.Header.Get("Anthropic-Version"); got != s.version {
		bad("anthropic-version %q, want %q", got, s.version)
	}
	if r.Header.Get("Authorization") != "" {
		bad("an Authorization header was sent besides x-api-key")
	}
	if got := r.Header.Get("Content-Type"); got != "application/json" {
		bad("content-type %q, want application/json", got)
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		bad("reading the body: %v", err)
		return
	}
	if ex.Request == nil {
		return
	}
	var got, want any
	if err := json.Unmarshal(body, &got); err != nil {
		bad("the body is not JSON: %v", err)
		return
	}
	_ = json.Unmarshal(ex.Request, &want)
	if !reflect.DeepEqual(got, want) {
		bad("the body differs from the transcript:\n got: %s\nwant: %s", compact(body), compact(ex.Request))
	}
}

func compact(b []byte) string {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return string(b)
	}
	return buf.String()
}
