package cli

import (
	"io"

	"github.com/agentrt/agentrt/internal/termsafe"
)

// humanWriter is a standard stream as Main hands it to the commands:
// what they print for people goes through termsafe (run data — a
// worker's output, a reason, a steer message, a provider's error — is
// attacker-influenced, and a terminal obeys the control sequences in
// it). Machine-read output bypasses it (machine): JSON, NDJSON, an MCP
// transport, a JSON log; so does a whole command run with --json (its
// stdout), and the status line and top, which write their own control
// sequences around text they escape themselves.
type humanWriter struct {
	raw io.Writer
	esc *termsafe.Writer
	// json: the command prints for machines (--json); everything it
	// writes passes unescaped. Set before the command runs.
	json bool
}

func newHumanWriter(w io.Writer) *humanWriter {
	return &humanWriter{raw: w, esc: termsafe.NewWriter(w)}
}

func (h *humanWriter) Write(p []byte) (int, error) {
	if h.json {
		return h.raw.Write(p)
	}
	return h.esc.Write(p)
}

// machine is the writer beneath w when w is one of Main's streams, for
// output a machine reads or that carries its own escapes; w itself
// otherwise. What w held of an unfinished rune is written first.
func machine(w io.Writer) io.Writer {
	if h, ok := w.(*humanWriter); ok {
		h.esc.Flush()
		return h.raw
	}
	return w
}

// unwrap is the writer beneath w when w is one of Main's streams, to
// ask what it is (a terminal?); w itself otherwise.
func unwrap(w io.Writer) io.Writer {
	if h, ok := w.(*humanWriter); ok {
		return h.raw
	}
	return w
}
