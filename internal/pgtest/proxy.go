package pgtest

import (
	"net"
	"net/url"
	"sync"
	"testing"
)

// Proxy is a TCP proxy in front of the test database that a test can
// switch to fail the way a real network and server fail, so that a real
// pgx pool behind it stops answering:
//
//   - BlackHole: every byte sent (on open connections and on new ones) is
//     accepted and nothing is answered, as when the server hangs or a
//     firewall drops packets — a call waits until its context ends.
//   - Reset: every open connection is reset, and new ones are reset as
//     soon as they are accepted — a call fails at once.
//   - Restore: the database answers again. A connection that lost bytes
//     to the black hole is closed (its protocol stream is torn), so a
//     pool reconnects.
//
// A Proxy is closed, with every connection, when the test ends.
type Proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	mode  proxyMode
	conns map[*proxyConn]struct{}
	wg    sync.WaitGroup
	done  bool
}

type proxyMode int

const (
	forward proxyMode = iota
	blackHole
	reset
)

// proxyConn is one client connection and its upstream.
type proxyConn struct {
	client, server net.Conn // server is nil for a connection accepted in a black hole
	torn           bool     // bytes were swallowed: the stream is unusable
}

// NewProxy starts a proxy on a loopback port in front of target
// (host:port) and closes it when t ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("pgtest: proxy: %v", err)
	}
	p := &Proxy{ln: ln, target: target, conns: map[*proxyConn]struct{}{}}
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

// ProxiedSchema is Schema reached through a new Proxy: it returns the
// connection URL (search_path set to the fresh schema) that goes through
// the proxy, and the proxy. The schema is created and dropped directly,
// so a test that leaves the proxy black-holed still cleans up.
func ProxiedSchema(t testing.TB) (string, *Proxy) {
	t.Helper()
	direct := Schema(t)
	u, err := url.Parse(direct)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
		t.Fatalf("pgtest: the proxy needs %s as a postgres:// URL with a host", URLEnv)
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "5432")
	}
	p := NewProxy(t, host)
	u.Host = p.Addr()
	return u.String(), p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// BlackHole makes the database stop answering: bytes on every open and
// new connection are accepted and dropped.
func (p *Proxy) BlackHole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = blackHole
}

// Reset resets every open connection and every new one.
func (p *Proxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = reset
	for c := range p.conns {
		c.abort()
		delete(p.conns, c)
	}
}

// Restore lets the database answer again, closing every connection the
// black hole tore.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = forward
	for c := range p.conns {
		if c.torn || c.server == nil {
			c.abort()
			delete(p.conns, c)
		}
	}
}

func (p *Proxy) close() {
	p.mu.Lock()
	p.done = true
	p.ln.Close()
	for c := range p.conns {
		c.abort()
		delete(p.conns, c)
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		mode, done := p.mode, p.done
		p.mu.Unlock()
		if done {
			client.Close()
			return
		}
		c := &proxyConn{client: client}
		switch mode {
		case reset:
			c.abort()
			continue
		case forward:
			server, err := net.Dial("tcp", p.target)
			if err != nil {
				c.abort()
				continue
			}
			c.server = server
		}
		p.mu.Lock()
		if p.done {
			p.mu.Unlock()
			c.abort()
			return
		}
		p.conns[c] = struct{}{}
		p.mu.Unlock()
		p.wg.Go(func() { p.pump(c, c.client, c.server) })
		if c.server != nil {
			p.wg.Go(func() { p.pump(c, c.server, c.client) })
		}
	}
}

// pump copies src to dst while the proxy forwards, and swallows what
// src sends while it is a black hole. dst is nil for a connection
// accepted in a black hole: everything it sends is swallowed.
func (p *Proxy) pump(c *proxyConn, src, dst net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			drop := p.mode != forward || dst == nil || c.torn
			if drop {
				c.torn = true
			}
			p.mu.Unlock()
			if !drop {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					err = werr
				}
			}
		}
		if err != nil {
			p.mu.Lock()
			if _, open := p.conns[c]; open {
				c.abort()
				delete(p.conns, c)
			}
			p.mu.Unlock()
			return
		}
	}
}

// abort closes both sides, resetting the client's connection (RST, not
// FIN) as a failed network does.
func (c *proxyConn) abort() {
	if tc, ok := c.client.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.client.Close()
	if c.server != nil {
		c.server.Close()
	}
}
