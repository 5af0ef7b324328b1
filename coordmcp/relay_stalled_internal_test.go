package coordmcp

import (
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// A relay started against a run whose supervising process is stalled
// (SIGSTOPped: its port accepts connections, nothing answers) said
// "the run is not live … context deadline exceeded" once its connect
// bound ran out — the same as for a run that ended. It now says the run
// did not answer within the bound and may be paused or overloaded
// (*UnresponsiveError, ErrUnresponsive), and not that it is not live.
func TestRelayToAStalledRunSaysItDidNotAnswer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn)
	released := make(chan struct{})
	defer func() {
		ln.Close() // ends the accept loop, which ends the holder
		<-released
	}()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	go func() {
		defer close(released)
		var held []net.Conn
		for c := range accepted {
			held = append(held, c) // accepted by the kernel, never answered
		}
		for _, c := range held {
			c.Close()
		}
	}()
	dir := t.TempDir()
	if _, err := writeEndpoint(dir, Endpoint{SchemaVersion: EndpointSchemaVersion, RunID: "stalled", URL: "http://" + ln.Addr().String() + "/mcp",
		Token: strings.Repeat("t", 40), PID: 4242}); err != nil {
		t.Fatal(err)
	}
	err = Relay(t.Context(), dir, strings.NewReader(""), io.Discard, RelayOptions{ConnectTimeout: 300 * time.Millisecond})
	var ue *UnresponsiveError
	if !errors.As(err, &ue) || !errors.Is(err, ErrUnresponsive) || errors.Is(err, ErrNotLive) {
		t.Fatalf("relay to a stalled run: %v, want an *UnresponsiveError, not ErrNotLive", err)
	}
	msg := err.Error()
	for _, want := range []string{"did not answer within 300ms", "paused or overloaded", "4242"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q does not say %q", msg, want)
		}
	}
}
