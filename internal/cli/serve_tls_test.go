package cli_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt/providers/remote"
)

// selfSigned writes a fresh self-signed certificate for 127.0.0.1 and
// its key as PEM files and returns their paths and the certificate.
func selfSigned(t *testing.T) (certFile, keyFile string, cert *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "agentrt serve test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	if cert, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, cert
}

// Issue 14, TLS on serve: agentrt serve with --tls-cert/--tls-key speaks
// HTTPS only; providers/remote trusting the self-signed certificate
// (Options.RootCAs; $AGENTRT_SERVE_CA_FILE for the CLI) runs a turn
// through it, one that does not trust it is refused at the handshake,
// and plain HTTP to the TLS port gets no answer of the server's.
func TestServeTLSThroughRemote(t *testing.T) {
	certFile, keyFile, cert := selfSigned(t)
	srv := startServeProc(t, nil, "--tls-cert", certFile, "--tls-key", keyFile)
	if !strings.HasPrefix(srv.url, "https://") {
		t.Fatalf("agentrt serve with TLS listens on %s, want https://", srv.url)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	roots := x509.NewCertPool()
	roots.AddCert(cert)
	trusting, err := remote.New(remote.Options{BaseURL: srv.url, Token: serveToken, RootCAs: roots})
	if err != nil {
		t.Fatal(err)
	}
	if caps, err := trusting.Capabilities(ctx); err != nil || caps == nil {
		t.Fatalf("capabilities over TLS with the CA trusted: %v", err)
	}

	strange, err := remote.New(remote.Options{BaseURL: srv.url, Token: serveToken, MaxRetries: 1, RetryBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := strange.Capabilities(ctx); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("capabilities over TLS without trusting the CA: %v, want a certificate refusal", err)
	}
	plain, err := remote.New(remote.Options{BaseURL: "http://" + strings.TrimPrefix(srv.url, "https://"), Token: serveToken, MaxRetries: 1, RetryBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Capabilities(ctx); err == nil {
		t.Fatal("plain HTTP to the TLS server was answered")
	}

	// The CLI: agentrt run --provider remote trusts $AGENTRT_SERVE_CA_FILE.
	t.Setenv("AGENTRT_SERVE_TOKEN", serveToken)
	t.Setenv("AGENTRT_SERVE_CA_FILE", certFile)
	out, errOut, code := run(t, "", "run", noteWriter, "--task", "Say hello.", "--provider", "remote", "--base-url", srv.url, "--db", filepath.Join(t.TempDir(), "a.db"), "--json")
	if code != 0 {
		t.Fatalf("agentrt run over TLS with $AGENTRT_SERVE_CA_FILE: exit %d\n%s%s", code, out, errOut)
	}
	t.Setenv("AGENTRT_SERVE_CA_FILE", filepath.Join(t.TempDir(), "missing.pem"))
	if _, errOut, code := run(t, "", "run", noteWriter, "--task", "Say hello.", "--provider", "remote", "--base-url", srv.url, "--db", filepath.Join(t.TempDir(), "b.db")); code != 2 || !strings.Contains(errOut, "AGENTRT_SERVE_CA_FILE") {
		t.Fatalf("a missing $AGENTRT_SERVE_CA_FILE: exit %d, %s; want a usage error naming it", code, errOut)
	}
	srv.stop(t, syscall.SIGTERM, 60*time.Second)
	if !strings.Contains(srv.logged(), "agentrt serve: stopped") {
		t.Errorf("the TLS server did not stop gracefully; its log:\n%s", srv.logged())
	}
}

// --tls-cert and --tls-key go together, and each must load; the grace
// is positive and the record bound not negative: a usage error (exit 2)
// that says what to give, before anything listens.
func TestServeRefusesBadTLSGraceAndBoundFlags(t *testing.T) {
	certFile, keyFile, _ := selfSigned(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"cert alone", []string{"--tls-cert", certFile}, "go together"},
		{"key alone", []string{"--tls-key", keyFile}, "go together"},
		{"key is no key", []string{"--tls-cert", certFile, "--tls-key", certFile}, "loading --tls-cert"},
		{"no such cert", []string{"--tls-cert", filepath.Join(t.TempDir(), "none.pem"), "--tls-key", keyFile}, "loading --tls-cert"},
		{"zero grace", []string{"--shutdown-grace", "0s"}, "--shutdown-grace"},
		{"negative bound", []string{"--max-records", "-1"}, "--max-records"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := run(t, "", append([]string{"serve", "--listen", "127.0.0.1:0"}, tc.args...)...)
			if code != 2 || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d, %q; want 2 and %q", code, errOut, tc.want)
			}
		})
	}
}
