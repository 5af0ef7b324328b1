package coordmcp

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/agentrt/agentrt/mcpserver"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/supervise"
)

// PeerMailPath prefixes the path of a worker's peer mail endpoint; the
// rest of the path is the worker's capability.
const PeerMailPath = "/peer-mail/"

// peerMailMaxRequestBytes bounds one request to a peer mail endpoint:
// room for the largest mail PeerMail allows (its ceilings, every byte
// escaped), far under mcpserver's default, which is sized for files.
const peerMailMaxRequestBytes = 1 << 20

// MountPeerMail serves one worker's peer mail tools (supervise.Work.PeerMail:
// send_mail and read_mail, already bound to that worker, so the sender is
// never an argument) on an MCP endpoint of its own — streamable HTTP on a
// fresh 127.0.0.1 port, at PeerMailPath plus a 256-bit random
// capability, which is the credential (compared in constant time;
// a request body is bounded at 1 MiB): the endpoint serves those two
// tools only and no coordination verb, so holding it grants no steer,
// spawn or stop. It returns the MCP server to mount in the worker's
// profile (supervise.PeerMailAlias) and its release, which closes the
// endpoint, giving in-flight calls at most shutdownGrace. Set it as
// supervise.KernelExecutor.PeerMailMount.
func MountPeerMail(ctx context.Context, w supervise.Work) (profile.MCPServer, func(), error) {
	if len(w.PeerMail) == 0 {
		return profile.MCPServer{}, nil, errors.New("coordmcp: the worker was given no peer mail tools (Options.PeerMail)")
	}
	logger := slog.New(slog.DiscardHandler)
	srv, err := mcpserver.New(w.PeerMail, &mcpserver.Options{Name: supervise.PeerMailAlias, Version: version(""), Logger: logger,
		Instructions: "Peer mail of worker " + string(w.Node) + " in supervised run " + w.RunID + ": send_mail to a live sibling, read_mail to read your own mailbox."})
	if err != nil {
		return profile.MCPServer{}, nil, err
	}
	capability, err := newToken()
	if err != nil {
		return profile.MCPServer{}, nil, fmt.Errorf("coordmcp: a peer mail capability: %w", err)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return profile.MCPServer{}, nil, fmt.Errorf("coordmcp: listening on loopback: %w", err)
	}
	mcpHandler := mcpserver.HTTPHandler(srv, mcpserver.HTTPOptions{Logger: logger, MaxRequestBytes: peerMailMaxRequestBytes})
	want := sha256.Sum256([]byte(PeerMailPath + capability))
	// The capability is the credential: the path is compared in
	// constant time (of digests), never by a router's string match.
	serve := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		got := sha256.Sum256([]byte(r.URL.Path))
		if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			http.NotFound(rw, r)
			return
		}
		mcpHandler.ServeHTTP(rw, r)
	})
	hs := &http.Server{Handler: serve, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	served := make(chan struct{})
	go func() {
		defer close(served)
		hs.Serve(ln)
	}()
	release := func() {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		if err := hs.Shutdown(ctx); err != nil {
			hs.Close() // open event streams do not end on their own
		}
		<-served
	}
	url, transport := "http://"+ln.Addr().String()+PeerMailPath+capability, "http"
	return profile.MCPServer{Transport: &transport, URL: &url}, release, nil
}
