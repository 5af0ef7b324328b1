package profile_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/schema"
)

// An ill-formed member name (a lone surrogate) is refused wherever it
// is, metadata and extensions included, each at its own pointer in
// document order; a record's own key is refused by the record, which
// stops the walk. A profile without one passes.
func TestNestedMemberNamesWellFormed(t *testing.T) {
	// Lone surrogates as canonjson keeps them (generalized UTF-8).
	const d800, dc00, dbff, dfff = "\xed\xa0\x80", "\xed\xb0\x80", "\xed\xaf\xbf", "\xed\xbf\xbf"
	tests := []struct {
		name, doc string
		paths     []string
	}{
		{"none", `{"metadata": {"a": {"b": [{"c": 1}]}}, "extensions": {"v": {"k": {"x": []}}}}`, nil},
		{"in metadata", `{"metadata": {"a": {"\ud800": 1}}}`, []string{"/metadata/a/" + d800}},
		{"in an array", `{"metadata": {"a": [{"ok": 1}, {"\udc00x": 1}]}}`, []string{"/metadata/a/1/" + dc00 + "x"}},
		{"three places", `{"metadata": {"a": {"\ud800": {"\udbff": 1}}}, "extensions": {"v": {"k": {"\udfff": null}}}}`,
			[]string{"/metadata/a/" + d800, "/metadata/a/" + d800 + "/" + dbff, "/extensions/v/k/" + dfff}},
		{"a record's own key is refused there", `{"metadata": {"\ud800": {"\udbff": 1}}}`, []string{"/metadata/" + d800}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := profile.Parse([]byte(tc.doc))
			var paths []string
			if se, ok := errors.AsType[*schema.Error](err); ok {
				for _, is := range se.Issues {
					paths = append(paths, is.Path)
				}
			} else if err != nil {
				t.Fatalf("err %v (%T)", err, err)
			}
			if d := cmp.Diff(tc.paths, paths); d != "" {
				t.Errorf("issue paths (-want +got):\n%s\n%v", d, err)
			}
		})
	}
}
