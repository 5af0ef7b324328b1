package mcpserver

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTP defaults.
const (
	// DefaultSessionTimeout closes a streamable HTTP session after this
	// long without a request.
	DefaultSessionTimeout = 30 * time.Minute
	// DefaultMaxRequestBytes bounds one request body: a file of up to
	// 8 MiB, base64-encoded, fits with room to spare.
	DefaultMaxRequestBytes = 16 << 20
)

// HTTPOptions adjusts HTTPHandler. The zero value serves without a token.
type HTTPOptions struct {
	// Token, when not empty, is the bearer token every request must
	// carry (Authorization: Bearer <token>); others get 401. The host
	// decides when one is required (any address that is not loopback).
	Token string
	// SessionTimeout closes idle sessions; 0 means DefaultSessionTimeout.
	SessionTimeout time.Duration
	// MaxRequestBytes bounds a request body; 0 means
	// DefaultMaxRequestBytes.
	MaxRequestBytes int64
	// Logger receives the transport's log; nil discards it.
	Logger *slog.Logger
}

// HTTPHandler serves srv over MCP streamable HTTP, one session per
// client, with the SDK's DNS-rebinding protection for loopback, and
// refuses browser cross-origin requests. With opts.Token set, a request
// without that bearer token is refused before it reaches srv; the token
// is compared in constant time and never logged.
func HTTPHandler(srv *mcp.Server, opts HTTPOptions) http.Handler {
	if opts.SessionTimeout <= 0 {
		opts.SessionTimeout = DefaultSessionTimeout
	}
	if opts.MaxRequestBytes <= 0 {
		opts.MaxRequestBytes = DefaultMaxRequestBytes
	}
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		Logger:              opts.Logger,
		SessionTimeout:      opts.SessionTimeout,
		MaxRequestBodyBytes: opts.MaxRequestBytes,
	})
	h = http.NewCrossOriginProtection().Handler(h)
	if opts.Token != "" {
		want := sha256.Sum256([]byte(opts.Token))
		verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
			got := sha256.Sum256([]byte(token))
			if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
				return nil, fmt.Errorf("%w: wrong bearer token", auth.ErrInvalidToken)
			}
			// One identity: the host that holds the token. The SDK binds
			// each session to it.
			return &auth.TokenInfo{UserID: "host"}, nil
		}
		h = auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
	}
	return h
}
