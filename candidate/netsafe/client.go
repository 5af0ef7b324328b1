package netsafe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"syscall"
	"time"

	"github.com/agentrt/agentrt/candidate"
)

// ErrBlocked is matched (errors.Is) by every refusal to reach an address
// or host the rules forbid.
var ErrBlocked = errors.New("netsafe: blocked address")

// BlockedError is one refusal: Host as the request named it and, when the
// refusal happened at connect time, the address it resolved to.
type BlockedError struct {
	// Host is the host the request or redirect named.
	Host string
	// Addr is the address refused at connect time; invalid when the host
	// itself was refused before any lookup.
	Addr netip.Addr
	// Reason says which rule refused it.
	Reason string
}

func (e *BlockedError) Error() string {
	if e.Addr.IsValid() {
		return fmt.Sprintf("netsafe: refused to connect to %s (%s): %s", e.Addr, e.Host, e.Reason)
	}
	return fmt.Sprintf("netsafe: refused host %q: %s", e.Host, e.Reason)
}

// Is makes a BlockedError match ErrBlocked.
func (e *BlockedError) Is(target error) bool { return target == ErrBlocked }

// ErrTooLarge is matched by a response longer than the caller's bound.
var ErrTooLarge = errors.New("netsafe: response larger than allowed")

// ErrStatus is matched by a response whose status is not 200 OK.
var ErrStatus = errors.New("netsafe: unexpected HTTP status")

// Options configure NewClient. The zero value is the strict default.
type Options struct {
	// Timeout bounds each request, redirects and body included; 0 means
	// 30 seconds.
	Timeout time.Duration
	// MaxRedirects is how many redirects a request may follow, each
	// re-checked like the first request; 0 (the default) refuses every
	// redirect, as spec candidate §3.6 prefers.
	MaxRedirects int
	// Permit lists address prefixes the caller trusts even though the
	// rules block them (an internal mirror the operator runs, say). Empty
	// by default. A candidate never supplies it.
	Permit []netip.Prefix
	// Resolver resolves names; nil means net.DefaultResolver.
	Resolver *net.Resolver
}

// policy is the address decision of one client.
type policy struct{ permit []netip.Prefix }

func (p policy) allowed(a netip.Addr) bool {
	a = a.Unmap().WithZone("")
	if slices.ContainsFunc(p.permit, func(pr netip.Prefix) bool { return pr.Contains(a) }) {
		return true
	}
	return !Blocked(a)
}

// checkHost refuses, before any lookup, a URL whose host is private as
// written, is spelled other than its normalization (127.1, 0x7f.1 and
// 2130706433 are 127.0.0.1 in a browser but names to a resolver), or is
// a scheme other than https and http.
func (p policy) checkHost(u *url.URL) error {
	if u.Scheme != "https" && u.Scheme != "http" {
		return &BlockedError{Host: u.Host, Reason: fmt.Sprintf("scheme %q is not http(s)", u.Scheme)}
	}
	if u.User != nil {
		return &BlockedError{Host: u.Host, Reason: "a URL with credentials is never dereferenced"}
	}
	host := u.Hostname()
	norm, ok := normalizeHost(host)
	switch {
	case !ok || host == "":
		return &BlockedError{Host: host, Reason: "not a valid host"}
	case norm != host:
		return &BlockedError{Host: host, Reason: fmt.Sprintf("an unusual spelling of %s", norm)}
	}
	if a, err := netip.ParseAddr(norm); err == nil {
		if !p.allowed(a) {
			return &BlockedError{Host: host, Reason: "a private or internal address"}
		}
		return nil
	}
	if candidate.IsPrivateHost(norm) {
		return &BlockedError{Host: host, Reason: "a private or metadata name"}
	}
	return nil
}

// NewClient returns an HTTP client that never reaches a blocked address:
// the host is checked before lookup, every connect target at dial time
// (so every DNS answer, after every redirect, is checked where it is
// used), and redirects are refused or re-checked. It ignores proxy
// settings from the environment.
func NewClient(opts Options) *http.Client {
	p := policy{permit: slices.Clone(opts.Permit)}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	dialer := &net.Dialer{
		Timeout:  timeout,
		Resolver: opts.Resolver,
		Control: func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return &BlockedError{Host: address, Reason: "an address that is not an IP address"}
			}
			if !p.allowed(ap.Addr()) {
				return &BlockedError{Host: address, Addr: ap.Addr(), Reason: "a private or internal address"}
			}
			return nil
		},
	}
	transport := &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
		MaxIdleConns:          16,
		IdleConnTimeout:       90 * time.Second,
	}
	return &http.Client{
		Transport: &checkingTransport{next: transport, p: p},
		Timeout:   timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > opts.MaxRedirects {
				return &BlockedError{Host: req.URL.Host, Reason: fmt.Sprintf("redirect %d refused (at most %d allowed)", len(via), opts.MaxRedirects)}
			}
			return p.checkHost(req.URL)
		},
	}
}

// checkingTransport checks every request's host before it is sent.
type checkingTransport struct {
	next http.RoundTripper
	p    policy
}

func (t *checkingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := t.p.checkHost(req.URL); err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	return t.next.RoundTrip(req)
}

// Fetch GETs url with client and returns the whole body, refusing a
// response that is not 200 OK (ErrStatus) or longer than maxBytes
// (ErrTooLarge; at most maxBytes+1 bytes are ever read).
func Fetch(ctx context.Context, client *http.Client, rawURL string, maxBytes int64) ([]byte, error) {
	body, err := Open(ctx, client, rawURL, maxBytes)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	data, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	return data, nil
}

// Open GETs url with client and returns its body, which fails with
// ErrTooLarge once more than maxBytes were read (the caller hashes as it
// reads and trusts nothing before EOF). A status other than 200 OK is
// refused with ErrStatus.
func Open(ctx context.Context, client *http.Client, rawURL string, maxBytes int64) (io.ReadCloser, error) {
	if maxBytes < 0 {
		return nil, fmt.Errorf("netsafe: maxBytes %d is negative", maxBytes)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, fmt.Errorf("netsafe: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("%w: %s from %s", ErrStatus, resp.Status, req.URL.Redacted())
	}
	if resp.ContentLength > maxBytes {
		resp.Body.Close()
		return nil, fmt.Errorf("%w: %s declares %d bytes, more than %d", ErrTooLarge, req.URL.Redacted(), resp.ContentLength, maxBytes)
	}
	return &boundedBody{rc: resp.Body, left: maxBytes, max: maxBytes}, nil
}

// boundedBody fails once more than max bytes were read.
type boundedBody struct {
	rc        io.ReadCloser
	left, max int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n + int(b.left), fmt.Errorf("%w: more than %d bytes", ErrTooLarge, b.max)
	}
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }
