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

// pgx's background reader can sit in a Read of an idle pooled
// connection (a read it started before the query ended goes on until
// data arrives), holding the socket's read lock: the check must not
// wait for that lock, or Acquire hangs until the server speaks — for
// ever on an idle connection (TestFleetEndToEnd hung so, every follower
// parked in ShouldPing).
func TestConnQuietWhileAReadIsBlocked(t *testing.T) {
	client, server := tcpPair(t)
	read := make(chan error, 1)
	go func() {
		var b [1]byte
		_, err := client.Read(b[:]) // blocks: nothing is sent yet
		read <- err
	}()
	time.Sleep(100 * time.Millisecond) // the Read is parked by now
	quiet := make(chan bool, 1)
	go func() { quiet <- connQuiet(client) }()
	answered := false
	select {
	case q := <-quiet:
		answered = true
		if !q {
			t.Error("an idle socket read as not quiet")
		}
	case <-time.After(5 * time.Second):
		t.Error("connQuiet waited on the read lock of a Read in flight")
	}
	// Let the Read (and a connQuiet still waiting behind it) end.
	if _, err := server.Write([]byte{1}); err != nil {
		t.Fatal(err)
	}
	if err := <-read; err != nil {
		t.Fatal(err)
	}
	if !answered {
		select {
		case <-quiet:
		case <-time.After(10 * time.Second):
			t.Fatal("connQuiet never returned")
		}
	}
}
