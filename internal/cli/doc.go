// Package cli implements the agentrt command line. Every command writes
// results for people by default and JSON with --json, sends progress and
// diagnostics to stderr, and exits 0 when it succeeded, 1 when the input
// was refused or the work failed, and 2 on a usage error: a bad flag or
// argument, or a file the user named that cannot be read (a file that
// reads but whose content is refused is exit 1). A command that groups
// others (agentrt runs) run without one of them, or with one it does not
// have, is a usage error too; --help prints help on stdout, exit 0. A
// usage error is always made one (usage, unreadable); any other error a
// command returns exits 1 (classifyErrors), its message followed by what
// to do when the system names the cause (a refused connection, a full
// disk, a path that cannot be made or written).
//
// Operator text that ends up in JSON (a worker reference, a message, a
// reason, --task, --expect, a run id) is checked as the command line is
// parsed (operand.go): text that is not UTF-8, and a worker reference or
// run id holding a control character, is a usage error naming the
// argument; a run id naming a directory must be one plain path element
// (no '/' or '\', not '.' or '..'). An idempotency key holding a control
// character, a directory path top shows (ROOT, --run-dir) that is not
// UTF-8, an --after that is no event cursor, and a --run-id or
// --idempotency-key given with an empty value (--run-id=, which names
// nothing; leaving the flag out is what generates one) are usage errors
// too, before anything is written.
//
// Text for people is escaped for the terminal (internal/termsafe): Main
// wraps stderr, and stdout unless the command prints --json; JSON, NDJSON,
// JSON logs and the MCP stdio transports are machine streams and bypass it
// (termout.go).
package cli
