// Package servetest runs the real agentrt binary in tests: it builds
// cmd/agentrt once per test binary (Binary) and starts `agentrt serve`
// on a free loopback port (Serve), so a package that may not import the
// server (providers/remote, layer 2) and the server's own package test
// against the same process a user runs. It is imported only from
// _test.go files.
package servetest
