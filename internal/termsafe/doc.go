// Package termsafe makes text safe to show on a terminal. Run data — a
// worker's output, a failure reason, a steer message, a provider's error
// — is written by whoever drives the run, and a terminal obeys the
// control sequences in what it is shown: "\x1b]0;…\x07" retitles the
// window, "\x1b[2J" clears the screen, a bare "\r" overwrites a line.
//
// The rule, in one place: every C0 control byte except "\n" and "\t",
// DEL (0x7f), and every byte that is not part of valid UTF-8 becomes the
// four visible characters \xNN (lowercase hex); every C1 control
// (U+0080–U+009F, which some terminals obey as ESC-sequences) becomes
// the six visible characters \u00NN. Everything else passes unchanged,
// so text that is already safe is written byte for byte, and escaping
// is idempotent. Line also escapes "\n" and "\t", for text that must
// stay on one line.
//
// Only text for people is escaped. Machine-read output (JSON, NDJSON,
// an MCP transport, journals) is never passed through it: JSON escapes
// what it must itself, and its bytes are the record.
package termsafe
