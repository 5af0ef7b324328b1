package graph

import (
	"reflect"
	"slices"
	"testing"

	"github.com/agentrt/agentrt/supervise"
)

// §3.7 Options: every supervise option is classified as owned,
// transformed, refused or forwarded — exactly the fields supervise has.
func TestEverySuperviseOptionIsClassified(t *testing.T) {
	typ := reflect.TypeFor[supervise.Options]()
	var fields []string
	for f := range typ.Fields() {
		fields = append(fields, f.Name)
		if _, ok := superviseOptionClass[f.Name]; !ok {
			t.Errorf("supervise.Options.%s is not classified for graph runs", f.Name)
		}
	}
	for name := range superviseOptionClass {
		if !slices.Contains(fields, name) {
			t.Errorf("superviseOptionClass names %s, which supervise.Options no longer has", name)
		}
	}
}
