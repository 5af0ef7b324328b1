package contract_test

import (
	"github.com/agentrt/agentrt/internal/vectors"
	"github.com/agentrt/agentrt/schema"
)

// acceptVia validates raw text with node, then decodes the output into a
// fresh T and converts it back, so the vectors also prove that the Go
// types keep presence.
func acceptVia[T any](kind string, node schema.Node) vectors.Accept {
	return vectors.AcceptVia[T](kind, node)
}
