package lbpkg

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// node is one YAML value of a generated file: a mapping with ordered keys,
// a sequence or a scalar. Only what the manifests need is supported.
type node interface{ isNode() }

// kv is one key of a mapping.
type kv struct {
	k string
	v node
}

type (
	ymap    []kv
	yseq    []node
	yscalar struct{ v any } // string, bool, json.Number, int or nil
)

func (ymap) isNode()    {}
func (yseq) isNode()    {}
func (yscalar) isNode() {}

func str(s string) node { return yscalar{s} }

// fromJSON turns a decoded JSON value (UseNumber) into a node, with object
// keys sorted so the output does not depend on map order.
func fromJSON(v any) node {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		m := make(ymap, 0, len(keys))
		for _, k := range keys {
			m = append(m, kv{k, fromJSON(x[k])})
		}
		return m
	case []any:
		s := make(yseq, 0, len(x))
		for _, e := range x {
			s = append(s, fromJSON(e))
		}
		return s
	}
	return yscalar{v}
}

// anyNode converts a Go value through JSON.
func anyNode(v any) (node, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return rawNode(raw)
}

func rawNode(raw []byte) (node, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return fromJSON(v), nil
}

// encodeYAML writes n as block YAML. Strings are always double-quoted with
// JSON escapes, which YAML reads the same way, so no text can be mistaken
// for a number, a boolean or YAML syntax.
func encodeYAML(n node) []byte {
	var b bytes.Buffer
	writeNode(&b, n, 0, false)
	return b.Bytes()
}

func scalarText(s yscalar) string {
	switch v := s.v.(type) {
	case nil:
		return "null"
	case string:
		q, _ := json.Marshal(v)
		return string(q)
	case bool:
		return strconv.FormatBool(v)
	case json.Number:
		return v.String()
	case int:
		return strconv.Itoa(v)
	}
	q, _ := json.Marshal(fmt.Sprint(s.v)) // not produced by this package's callers
	return string(q)
}

func writeNode(b *bytes.Buffer, n node, indent int, inSeq bool) {
	pad := strings.Repeat("  ", indent)
	switch x := n.(type) {
	case ymap:
		if len(x) == 0 {
			b.WriteString(" {}\n")
			return
		}
		if !inSeq {
			b.WriteString("\n")
		}
		for i, e := range x {
			if !(inSeq && i == 0) {
				b.WriteString(pad)
			}
			key, _ := json.Marshal(e.k)
			if isPlainKey(e.k) {
				key = []byte(e.k)
			}
			b.Write(key)
			b.WriteString(":")
			writeValue(b, e.v, indent+1)
		}
	case yseq:
		if len(x) == 0 {
			b.WriteString(" []\n")
			return
		}
		b.WriteString("\n")
		for _, e := range x {
			b.WriteString(pad + "- ")
			switch e.(type) {
			case ymap:
				writeNode(b, e, indent+1, true)
			case yseq:
				b.WriteString("\n")
				writeNode(b, e, indent+1, false)
			default:
				b.WriteString(scalarText(e.(yscalar)) + "\n")
			}
		}
	case yscalar:
		b.WriteString(scalarText(x) + "\n")
	}
}

func writeValue(b *bytes.Buffer, v node, indent int) {
	switch x := v.(type) {
	case yscalar:
		b.WriteString(" " + scalarText(x) + "\n")
	default:
		writeNode(b, v, indent, false)
	}
}

// isPlainKey reports whether k can be written unquoted as a mapping key.
func isPlainKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || (i > 0 && c == '-')) {
			return false
		}
	}
	switch strings.ToLower(k) {
	case "y", "n", "yes", "no", "on", "off", "true", "false", "null":
		return false
	}
	return k[0] < '0' || k[0] > '9'
}
