// Package cli implements the agentrt command line. Every command writes
// results for people by default and JSON with --json, sends progress and
// diagnostics to stderr, and exits 0 when it succeeded, 1 when the input
// was refused or the work failed, and 2 on a usage error.
//
// Text for people is escaped for the terminal (internal/termsafe): Main
// wraps stderr, and stdout unless the command prints --json; JSON, NDJSON,
// JSON logs and the MCP stdio transports are machine streams and bypass it
// (termout.go).
package cli
