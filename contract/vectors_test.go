package contract_test

import (
	"errors"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/internal/vectors"
	"github.com/agentrt/agentrt/schema"
)

// acceptVia validates raw text with node, then decodes the output into a
// fresh T and converts it back, so the vectors also prove that the Go
// types keep presence.
func acceptVia[T any](kind string, node schema.Node) vectors.Accept {
	return func(raw []byte) (canonjson.Value, error) {
		v, err := schema.Decode(kind, raw)
		if err != nil {
			return canonjson.Value{}, err
		}
		out, err := schema.Run(kind, node, v)
		if err != nil {
			return canonjson.Value{}, err
		}
		typed := new(T)
		if err := canonjson.FromValue(out, typed); err != nil {
			return canonjson.Value{}, errors.New("accepted value does not fit the Go type: " + err.Error())
		}
		back, err := canonjson.ToValue(typed)
		if err != nil {
			return canonjson.Value{}, err
		}
		if !canonjson.Equal(back, out) {
			return canonjson.Value{}, errors.New("Go type does not round-trip: " + string(canonjson.Marshal(back)) + " vs " + string(canonjson.Marshal(out)))
		}
		return out, nil
	}
}
