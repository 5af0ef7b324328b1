//go:build unix && !solaris && !aix

package pgdb

import (
	"crypto/tls"
	"net"
	"testing"
	"time"
)

// tcpPair is both ends of a loopback TCP connection.
func tcpPair(t testing.TB) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	select {
	case server = <-accepted:
	case <-time.After(10 * time.Second):
		t.Fatal("no connection accepted")
	}
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { server.Close() })
	return client, server
}

// waitNotQuiet polls connQuiet until it reports the socket not quiet.
func waitNotQuiet(t *testing.T, c net.Conn) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for connQuiet(c) {
		if time.Now().After(deadline) {
			t.Fatal("the socket still looks quiet 10 s after the peer wrote or closed")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// An idle connection whose peer said nothing is quiet; one whose peer
// wrote (PostgreSQL's FATAL message to a terminated backend's client)
// or closed is not, and peeking takes nothing from it. (PG14: a pooled
// connection the server cut is pinged, so replaced, before use.)
func TestConnQuiet(t *testing.T) {
	t.Run("idle", func(t *testing.T) {
		client, _ := tcpPair(t)
		if !connQuiet(client) {
			t.Fatal("an idle connection looks not quiet")
		}
	})
	t.Run("written", func(t *testing.T) {
		client, server := tcpPair(t)
		if _, err := server.Write([]byte("E")); err != nil {
			t.Fatal(err)
		}
		waitNotQuiet(t, client)
		buf := make([]byte, 4)
		if err := client.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
			t.Fatal(err)
		}
		if n, err := client.Read(buf); err != nil || string(buf[:n]) != "E" {
			t.Fatalf("after the peek the read got %q, %v; want the byte peeked at", buf[:n], err)
		}
	})
	t.Run("closed", func(t *testing.T) {
		client, server := tcpPair(t)
		server.Close()
		waitNotQuiet(t, client)
	})
	t.Run("tls-wrapped", func(t *testing.T) {
		client, server := tcpPair(t)
		wrapped := tls.Client(client, &tls.Config{InsecureSkipVerify: true})
		if !connQuiet(wrapped) {
			t.Fatal("an idle wrapped connection looks not quiet")
		}
		server.Close()
		waitNotQuiet(t, wrapped)
	})
}

// BenchmarkConnQuiet is what ShouldPing adds to taking a connection from
// the pool: one non-blocking peek.
func BenchmarkConnQuiet(b *testing.B) {
	client, _ := tcpPair(b)
	for b.Loop() {
		if !connQuiet(client) {
			b.Fatal("not quiet")
		}
	}
}
