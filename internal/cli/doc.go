// Package cli implements the agentrt command line. Every command writes
// results for people by default and JSON with --json, sends progress and
// diagnostics to stderr, and exits 0 when it succeeded, 1 when the input
// was refused or the work failed, and 2 on a usage error: a bad flag or
// argument, or a file the user named that cannot be read (a file that
// reads but whose content is refused is exit 1). A command that groups
// others (agentrt runs) run without one of them, or with one it does not
// have, is a usage error too; --help prints help on stdout, exit 0.
//
// Text for people is escaped for the terminal (internal/termsafe): Main
// wraps stderr, and stdout unless the command prints --json; JSON, NDJSON,
// JSON logs and the MCP stdio transports are machine streams and bypass it
// (termout.go).
package cli
