package netsafe_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/agentrt/agentrt/candidate/netsafe"
)

// server is a real HTTP server on addr (a loopback address) counting the
// requests that reach it.
type server struct {
	*httptest.Server
	hits atomic.Int64
}

func serve(t *testing.T, addr string, h http.HandlerFunc) *server {
	t.Helper()
	l, err := net.Listen("tcp", addr+":0")
	if err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	s := &server{}
	s.Server = &httptest.Server{Listener: l, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		h(w, r)
	})}}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func port(s *server) string { return s.URL[strings.LastIndexByte(s.URL, ':')+1:] }

// fakeDNS is a real UDP DNS server answering A queries from a table, so a
// test can make a public-looking name resolve to an internal address (DNS
// rebinding) without the machine's resolver.
func fakeDNS(t *testing.T, answers map[string]string) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var p dnsmessage.Parser
			h, err := p.Start(buf[:n])
			if err != nil {
				continue
			}
			q, err := p.Question()
			if err != nil {
				continue
			}
			b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true})
			b.EnableCompression()
			b.StartQuestions()
			b.Question(q)
			b.StartAnswers()
			if ip, ok := answers[strings.TrimSuffix(q.Name.String(), ".")]; ok && q.Type == dnsmessage.TypeA {
				b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 1}, dnsmessage.AResource{A: netip.MustParseAddr(ip).As4()})
			}
			msg, err := b.Finish()
			if err == nil {
				pc.WriteTo(msg, from)
			}
		}
	}()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", pc.LocalAddr().String())
	}}
}

func ok(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "hello") }

// loopback2 is trusted by the tests' clients through Options.Permit: it
// stands for a public server, so a redirect from it can be tested.
var loopback2 = []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}

// TestClientRefusesInternalTargets: spec candidate §3.6 and V33f — the
// host as written, every DNS answer at connect time, and redirects.
func TestClientRefusesInternalTargets(t *testing.T) {
	ctx := context.Background()
	internal := serve(t, "127.0.0.1", ok)
	p := port(internal)
	resolver := fakeDNS(t, map[string]string{
		"rebind.example":  "127.0.0.1",
		"private.example": "10.0.0.7",
		"public.example":  "127.0.0.2",
	})
	redirector := serve(t, "127.0.0.2", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	})
	strict := netsafe.NewClient(netsafe.Options{Resolver: resolver, Permit: loopback2})
	following := netsafe.NewClient(netsafe.Options{Resolver: resolver, Permit: loopback2, MaxRedirects: 3})

	for _, tc := range []struct {
		name   string
		client *http.Client
		url    string
		atDial bool // refused at connect time (the address is known)
	}{
		{"loopback literal", strict, "http://127.0.0.1:" + p + "/", false},
		{"127.1", strict, "http://127.1:" + p + "/", false},
		{"0x7f.1", strict, "http://0x7f.1:" + p + "/", false},
		{"2130706433", strict, "http://2130706433:" + p + "/", false},
		{"IPv4-mapped IPv6", strict, "http://[::ffff:127.0.0.1]:" + p + "/", false},
		{"IPv6 loopback", strict, "http://[::1]:" + p + "/", false},
		{"localhost", strict, "http://localhost:" + p + "/", false},
		{"metadata name", strict, "http://metadata.google.internal/", false},
		{"metadata address", strict, "http://169.254.169.254/latest/meta-data/", false},
		{"name rebinding to loopback", strict, "http://rebind.example:" + p + "/", true},
		{"name resolving to 10/8", strict, "http://private.example:" + p + "/", true},
		{"credentials in the URL", strict, "http://user:pw@public.example:" + port(redirector) + "/", false},
		{"not http", strict, "ftp://public.example/", false},
		{"redirect refused outright", strict, "http://127.0.0.2:" + port(redirector) + "/?to=http://public.example:" + port(redirector) + "/", false},
		{"redirect to loopback", following, "http://127.0.0.2:" + port(redirector) + "/?to=http://127.0.0.1:" + p + "/", false},
		{"redirect to a rebinding name", following, "http://127.0.0.2:" + port(redirector) + "/?to=http://rebind.example:" + p + "/", true},
		{"redirect to metadata", following, "http://127.0.0.2:" + port(redirector) + "/?to=http://169.254.169.254/", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := internal.hits.Load()
			body, err := netsafe.Fetch(ctx, tc.client, tc.url, 1<<20)
			if !errors.Is(err, netsafe.ErrBlocked) {
				t.Fatalf("Fetch(%s) = %q, %v; want ErrBlocked", tc.url, body, err)
			}
			var be *netsafe.BlockedError
			if !errors.As(err, &be) || be.Addr.IsValid() != tc.atDial {
				t.Errorf("refusal %v: refused at dial = %v, want %v", err, be != nil && be.Addr.IsValid(), tc.atDial)
			}
			if internal.hits.Load() != before {
				t.Error("the internal server was reached")
			}
		})
	}
}

// TestClientFetches: a permitted server is read, redirects within the
// allowance are followed, and the size bound holds with and without a
// declared length.
func TestClientFetches(t *testing.T) {
	ctx := context.Background()
	resolver := fakeDNS(t, map[string]string{"public.example": "127.0.0.2"})
	big := strings.Repeat("x", 4096)
	s := serve(t, "127.0.0.2", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hop":
			http.Redirect(w, r, "/data", http.StatusFound)
		case "/data":
			io.WriteString(w, "hello")
		case "/big":
			io.WriteString(w, big)
		case "/chunked":
			w.(http.Flusher).Flush() // no Content-Length: the body is chunked
			io.WriteString(w, big)
		case "/auth":
			fmt.Fprint(w, r.Header.Get("Authorization"))
		default:
			http.NotFound(w, r)
		}
	})
	c := netsafe.NewClient(netsafe.Options{Resolver: resolver, Permit: loopback2, MaxRedirects: 1})
	base := "http://public.example:" + port(s)
	if b, err := netsafe.Fetch(ctx, c, base+"/data", 5); err != nil || string(b) != "hello" {
		t.Errorf("Fetch /data = %q, %v", b, err)
	}
	if b, err := netsafe.Fetch(ctx, c, base+"/hop", 5); err != nil || string(b) != "hello" {
		t.Errorf("Fetch /hop = %q, %v", b, err)
	}
	for _, path := range []string{"/big", "/chunked"} {
		if b, err := netsafe.Fetch(ctx, c, base+path, 4095); !errors.Is(err, netsafe.ErrTooLarge) || b != nil {
			t.Errorf("Fetch %s bounded to 4095 = %d bytes, %v; want ErrTooLarge", path, len(b), err)
		}
		if b, err := netsafe.Fetch(ctx, c, base+path, 4096); err != nil || len(b) != 4096 {
			t.Errorf("Fetch %s bounded to 4096 = %d bytes, %v", path, len(b), err)
		}
	}
	if _, err := netsafe.Fetch(ctx, c, base+"/missing", 10); !errors.Is(err, netsafe.ErrStatus) {
		t.Errorf("a 404 = %v; want ErrStatus", err)
	}
}

// TestClientIgnoresProxyEnvironment: a proxy named by the environment is
// never used (it would see every request, and could reach anything).
func TestClientIgnoresProxyEnvironment(t *testing.T) {
	proxy := serve(t, "127.0.0.1", ok)
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("HTTPS_PROXY", proxy.URL)
	s := serve(t, "127.0.0.2", ok)
	c := netsafe.NewClient(netsafe.Options{Permit: loopback2})
	if b, err := netsafe.Fetch(context.Background(), c, s.URL, 10); err != nil || string(b) != "hello" {
		t.Fatalf("Fetch = %q, %v", b, err)
	}
	if proxy.hits.Load() != 0 || s.hits.Load() != 1 {
		t.Errorf("proxy hits %d, server hits %d; want 0 and 1", proxy.hits.Load(), s.hits.Load())
	}
}

func TestLocatorURLs(t *testing.T) {
	type c struct {
		name string
		fn   func() (string, error)
		want string
	}
	for _, tc := range []c{
		{"s3 aws default region", func() (string, error) { return netsafe.S3URL("", "bucket-1", "a/b c.tar", "") }, "https://s3.us-east-1.amazonaws.com/bucket-1/a/b%20c.tar"},
		{"s3 region", func() (string, error) { return netsafe.S3URL("", "my.bucket", "k", "eu-west-1") }, "https://s3.eu-west-1.amazonaws.com/my.bucket/k"},
		{"s3 compatible endpoint", func() (string, error) { return netsafe.S3URL("https://minio.example/", "b", "x/y", "") }, "https://minio.example/b/x/y"},
		{"s3 key with ..", func() (string, error) { return netsafe.S3URL("", "b", "a/../etc", "") }, ""},
		{"s3 key empty segment", func() (string, error) { return netsafe.S3URL("", "b", "a//b", "") }, ""},
		{"s3 odd region", func() (string, error) { return netsafe.S3URL("", "b", "k", "x@evil") }, ""},
		{"s3 endpoint with credentials", func() (string, error) { return netsafe.S3URL("https://u:p@h/", "b", "k", "") }, ""},
		{"ipfs", func() (string, error) {
			return netsafe.IPFSURL("", "bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi", "")
		}, "https://ipfs.io/ipfs/bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi"},
		{"ipfs path", func() (string, error) { return netsafe.IPFSURL("https://gw.example", "Qmcid", "dir/f #1") }, "https://gw.example/ipfs/Qmcid/dir/f%20%231"},
		{"ipfs cid with slash", func() (string, error) { return netsafe.IPFSURL("", "a/b", "") }, ""},
		{"ipfs file gateway", func() (string, error) { return netsafe.IPFSURL("file:///etc", "Qm", "") }, ""},
	} {
		got, err := tc.fn()
		switch {
		case tc.want == "" && !errors.Is(err, netsafe.ErrLocator):
			t.Errorf("%s: %q, %v; want ErrLocator", tc.name, got, err)
		case tc.want != "" && (err != nil || got != tc.want):
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}
