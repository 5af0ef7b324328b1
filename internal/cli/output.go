package cli

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/schema"
)

// writeJSON prints v as indented JSON followed by a newline. It writes
// through canonjson so that strings are never altered (encoding/json would
// replace lone surrogates and escape <, > and &), and past the terminal
// escaping of text for people (machine).
func writeJSON(w io.Writer, v any) error {
	val, ok := v.(canonjson.Value)
	if !ok {
		var err error
		if val, err = canonjson.ToValue(v); err != nil {
			return err
		}
	}
	var b bytes.Buffer
	indent(&b, val, 0)
	b.WriteByte('\n')
	_, err := machine(w).Write(b.Bytes())
	return err
}

func indent(b *bytes.Buffer, v canonjson.Value, depth int) {
	pad := func(d int) { b.WriteString(strings.Repeat("  ", d)) }
	switch v.Kind() {
	case canonjson.Object:
		if v.Len() == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteString("{\n")
		for i, m := range v.Members() {
			pad(depth + 1)
			b.Write(canonjson.Marshal(canonjson.StringValue(m.Name)))
			b.WriteString(": ")
			indent(b, m.Value, depth+1)
			if i < v.Len()-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		pad(depth)
		b.WriteByte('}')
	case canonjson.Array:
		if v.Len() == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteString("[\n")
		for i, item := range v.Items() {
			pad(depth + 1)
			indent(b, item, depth+1)
			if i < v.Len()-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		pad(depth)
		b.WriteByte(']')
	default:
		b.Write(canonjson.Marshal(v))
	}
}

// writeIssues prints a refusal for people.
func writeIssues(w io.Writer, what string, issues []schema.Issue) {
	fmt.Fprintf(w, "%s: refused (%d issue", what, len(issues))
	if len(issues) != 1 {
		fmt.Fprint(w, "s")
	}
	fmt.Fprintln(w, ")")
	for _, is := range issues {
		path := is.Path
		if path == "" {
			path = "(root)"
		}
		fmt.Fprintf(w, "  %s: %s [%s]\n", path, is.Message, is.Code)
	}
}
