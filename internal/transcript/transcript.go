package transcript

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/tools/txtar"
)

// Exchange is one request the client must send and the response the
// server answers it with.
type Exchange struct {
	// Method and Path are the request line's ("POST",
	// "/v1/chat/completions").
	Method, Path string
	// Header holds the request headers that must be present with exactly
	// these values (others are not checked).
	Header http.Header
	// Body is the expected request body as JSON, compared by value (key
	// order and spacing do not matter); nil checks nothing.
	Body []byte
	// Status, ResponseHeader and ResponseBody are the response, the body
	// written byte for byte and flushed after every blank line (each
	// server-sent event reaches the client as it would from a live
	// endpoint).
	Status         int
	ResponseHeader http.Header
	ResponseBody   []byte
	// Drop cuts the connection after the body, as an endpoint that dies
	// mid-stream (pseudo-header X-Transcript-Drop: true).
	Drop bool
	// Hang keeps the response open after the body until the client goes
	// away (pseudo-header X-Transcript-Hang: true).
	Hang bool
}

// Transcript is a recorded conversation with an endpoint.
type Transcript struct {
	// Comment is the transcript's description.
	Comment string
	// Exchanges are served in order.
	Exchanges []Exchange
}

// Load reads a transcript file.
func Load(path string) (*Transcript, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	tr, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return tr, nil
}

// Parse reads a transcript in txtar form: a comment, then for each
// exchange N (from 1) a file "N/request" — a request line, the headers to
// check, a blank line and the expected JSON body — and a file
// "N/response" — an HTTP/1.1 status line, headers, a blank line and the
// body bytes.
func Parse(data []byte) (*Transcript, error) {
	a := txtar.Parse(data)
	tr := &Transcript{Comment: strings.TrimSpace(string(a.Comment))}
	files := map[string][]byte{}
	for _, f := range a.Files {
		if _, dup := files[f.Name]; dup {
			return nil, fmt.Errorf("file %s appears twice", f.Name)
		}
		files[f.Name] = f.Data
	}
	for n := 1; ; n++ {
		req, okReq := files[strconv.Itoa(n)+"/request"]
		res, okRes := files[strconv.Itoa(n)+"/response"]
		if !okReq && !okRes {
			break
		}
		if !okReq || !okRes {
			return nil, fmt.Errorf("exchange %d needs both a request and a response", n)
		}
		x, err := parseExchange(req, res)
		if err != nil {
			return nil, fmt.Errorf("exchange %d: %w", n, err)
		}
		delete(files, strconv.Itoa(n)+"/request")
		delete(files, strconv.Itoa(n)+"/response")
		tr.Exchanges = append(tr.Exchanges, x)
	}
	for name := range files {
		return nil, fmt.Errorf("file %s is not part of an exchange", name)
	}
	if len(tr.Exchanges) == 0 {
		return nil, errors.New("no exchange")
	}
	return tr, nil
}

// head splits a message into its first line, its headers and its body.
func head(data []byte) (first string, h http.Header, body []byte, err error) {
	r := bufio.NewReader(bytes.NewReader(data))
	line, err := r.ReadString('\n')
	if err != nil {
		return "", nil, nil, errors.New("no first line")
	}
	first = strings.TrimRight(line, "\r\n")
	h = http.Header{}
	for {
		line, err := r.ReadString('\n')
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			return "", nil, nil, fmt.Errorf("header line %q has no colon", line)
		}
		h.Add(strings.TrimSpace(name), strings.TrimSpace(value))
		if err != nil {
			break
		}
	}
	body, _ = io.ReadAll(r)
	return first, h, body, nil
}

func parseExchange(req, res []byte) (Exchange, error) {
	var x Exchange
	first, h, body, err := head(req)
	if err != nil {
		return x, fmt.Errorf("request: %w", err)
	}
	var ok bool
	if x.Method, x.Path, ok = strings.Cut(first, " "); !ok {
		return x, fmt.Errorf("request line %q is not METHOD PATH", first)
	}
	x.Header = h
	if b := bytes.TrimSpace(body); len(b) > 0 {
		if !json.Valid(b) {
			return x, errors.New("the request body is not JSON")
		}
		x.Body = b
	}
	first, h, body, err = head(res)
	if err != nil {
		return x, fmt.Errorf("response: %w", err)
	}
	proto, rest, _ := strings.Cut(first, " ")
	code, _, _ := strings.Cut(rest, " ")
	if x.Status, err = strconv.Atoi(code); proto != "HTTP/1.1" || err != nil {
		return x, fmt.Errorf("status line %q is not HTTP/1.1 CODE TEXT", first)
	}
	x.Drop = h.Get("X-Transcript-Drop") == "true"
	x.Hang = h.Get("X-Transcript-Hang") == "true"
	h.Del("X-Transcript-Drop")
	h.Del("X-Transcript-Hang")
	x.ResponseHeader, x.ResponseBody = h, body
	return x, nil
}

// ServerOptions adjust a Server.
type ServerOptions struct {
	// Cycle serves the transcript again from its start after its last
	// exchange (benchmarks, conformance suites); without it a request
	// beyond the transcript fails the test.
	Cycle bool
	// Complete fails the test, when it ends, if the client did not ask
	// for every exchange of the transcript.
	Complete bool
	// Check runs on every request besides the exchange's own
	// expectations (the headers a vendor requires on every call, say).
	Check func(r *http.Request) error
}

// Server is a local endpoint speaking a vendor's wire protocol from a
// transcript: it checks each request against the exchange it
// expects, failing the test on a difference, and answers with the
// recorded bytes. It is safe for concurrent requests, which it serves in
// arrival order.
type Server struct {
	*httptest.Server
	t    testing.TB
	tr   *Transcript
	opts ServerOptions

	mu   sync.Mutex
	next int
	seen int
}

// NewServer starts a server for tr, closed when the test ends.
func NewServer(t testing.TB, tr *Transcript, opts ServerOptions) *Server {
	s := &Server{t: t, tr: tr, opts: opts}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(func() {
		s.Close()
		if opts.Complete && !opts.Cycle && !s.Served() {
			t.Errorf("transcript: the client made %d requests; the transcript has %d exchanges", s.Requests(), len(tr.Exchanges))
		}
	})
	return s
}

// Serve loads the transcript file at path and starts a server for it.
func Serve(t testing.TB, path string, opts ServerOptions) *Server {
	t.Helper()
	tr, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return NewServer(t, tr, opts)
}

// BaseURL is the endpoint's base URL, ending in "/v1/".
func (s *Server) BaseURL() string { return s.URL + "/v1/" }

// Requests returns how many requests arrived.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen
}

// Served reports whether every exchange of the transcript was served.
func (s *Server) Served() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen >= len(s.tr.Exchanges)
}

func (s *Server) exchange() (Exchange, int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen++
	if s.next >= len(s.tr.Exchanges) {
		if !s.opts.Cycle {
			return Exchange{}, s.seen, false
		}
		s.next = 0
	}
	x := s.tr.Exchanges[s.next]
	s.next++
	return x, s.seen, true
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	x, n, ok := s.exchange()
	if !ok {
		s.t.Errorf("transcript: request %d %s %s is beyond the transcript (%d exchanges)", n, r.Method, r.URL.Path, len(s.tr.Exchanges))
		http.Error(w, `{"error":{"message":"beyond the transcript","type":"server_error"}}`, http.StatusInternalServerError)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		s.t.Errorf("transcript: reading request %d: %v", n, err)
		return
	}
	if err := x.Check(r, body); err != nil {
		s.t.Errorf("transcript: request %d: %v", n, err)
	}
	if s.opts.Check != nil {
		if err := s.opts.Check(r); err != nil {
			s.t.Errorf("transcript: request %d: %v", n, err)
		}
	}
	for name, values := range x.ResponseHeader {
		w.Header()[name] = values
	}
	w.WriteHeader(x.Status)
	flusher, _ := w.(http.Flusher)
	rest := x.ResponseBody
	for len(rest) > 0 {
		i := bytes.Index(rest, []byte("\n\n"))
		chunk := rest
		if i >= 0 {
			chunk = rest[:i+2]
		}
		rest = rest[len(chunk):]
		if _, err := w.Write(chunk); err != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
	switch {
	case x.Drop:
		panic(http.ErrAbortHandler) // the connection dies without ending the body
	case x.Hang:
		<-r.Context().Done()
	}
}

// Check compares a request with what the exchange expects: method, path,
// the listed headers, and the body as JSON values.
func (x *Exchange) Check(r *http.Request, body []byte) error {
	var errs []error
	if r.Method != x.Method || r.URL.Path != x.Path {
		errs = append(errs, fmt.Errorf("got %s %s, want %s %s", r.Method, r.URL.Path, x.Method, x.Path))
	}
	for name, want := range x.Header {
		if got := r.Header.Values(name); !reflect.DeepEqual(got, want) {
			errs = append(errs, fmt.Errorf("header %s is %q, want %q", name, got, want))
		}
	}
	if x.Body != nil {
		var got, want any
		if err := json.Unmarshal(body, &got); err != nil {
			errs = append(errs, fmt.Errorf("the body is not JSON: %w", err))
		} else if json.Unmarshal(x.Body, &want); !reflect.DeepEqual(got, want) {
			errs = append(errs, fmt.Errorf("body differs:\n got  %s\n want %s", compact(body), compact(x.Body)))
		}
	}
	return errors.Join(errs...)
}

func compact(b []byte) string {
	var out bytes.Buffer
	if json.Compact(&out, b) != nil {
		return string(b)
	}
	return out.String()
}

// AnthropicHeaders is the Check of the Anthropic Messages API: every
// request carries the key in x-api-key (and no Authorization header),
// the API version and a JSON body.
func AnthropicHeaders(key, version string) func(*http.Request) error {
	return func(r *http.Request) error {
		var errs []error
		if r.Header.Get("X-Api-Key") != key {
			errs = append(errs, errors.New("x-api-key is not the test's key"))
		}
		if got := r.Header.Get("Anthropic-Version"); got != version {
			errs = append(errs, fmt.Errorf("anthropic-version %q, want %q", got, version))
		}
		if r.Header.Get("Authorization") != "" {
			errs = append(errs, errors.New("an Authorization header was sent besides x-api-key"))
		}
		if got := r.Header.Get("Content-Type"); got != "application/json" {
			errs = append(errs, fmt.Errorf("content-type %q, want application/json", got))
		}
		return errors.Join(errs...)
	}
}
