package spades_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// The canonical JSON of clients/conformance/README.md: object keys sorted by
// code point at every level, no whitespace, strings as UTF-8 with only `"`,
// `\` and control characters escaped (\b \f \n \r \t, else \u00XX), numbers
// as they came.

// protoValue is a message's proto3 JSON (protojson's defaults: lowerCamelCase
// names, default values left out, enums by name, 64-bit integers as strings)
// as a generic value. protojson's spacing is deliberately unstable, so its
// output is only ever parsed, never compared.
func protoValue(m proto.Message) (map[string]any, error) {
	raw, err := protojson.Marshal(m)
	if err != nil {
		return nil, err
	}
	var v map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// canonical encodes a value of maps, slices, strings, json.Number, numbers,
// bools and nil.
func canonical(v any) string {
	var b strings.Builder
	writeCanonical(&b, v)
	return b.String()
}

func writeCanonical(b *strings.Builder, v any) {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		if v {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case json.Number:
		b.WriteString(v.String())
	case int:
		fmt.Fprintf(b, "%d", v)
	case int32:
		fmt.Fprintf(b, "%d", v)
	case string:
		writeString(b, v)
	case []any:
		b.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			writeCanonical(b, x)
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys) // byte order of UTF-8 is code point order
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k)
			b.WriteByte(':')
			writeCanonical(b, v[k])
		}
		b.WriteByte('}')
	default:
		panic(fmt.Sprintf("canonical: unexpected %T", v))
	}
}

func writeString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 {
				fmt.Fprintf(b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}

func TestCanonicalJSON(t *testing.T) {
	got := canonical(map[string]any{
		"é": "<é>\u2028", "b": []any{json.Number("1"), true, nil}, "a": map[string]any{"z": "q\"\\\n\x01", "Z": int32(3)},
	})
	want := `{"a":{"Z":3,"z":"q\"\\\n\u0001"},"b":[1,true,null],"é":"<é>` + "\u2028" + `"}`
	if got != want {
		t.Fatalf("canonical:\n got %s\nwant %s", got, want)
	}
}
