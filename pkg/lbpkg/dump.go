package lbpkg

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf16"
)

// RuntimeChunkBytes is the LangBot plugin runtime's (SDK 0.5.5) stdio
// chunk size: a protocol message longer than this is sent as a
// chunk_start line, 16 KiB chunk_data lines each followed by a 1 ms sleep,
// and a chunk_end line (runtime/io/connections/stdio.py), which costs an
// event 5-8 ms on the benchmark's machine (docs/benchmarks.md).
const RuntimeChunkBytes = 16 * 1024

// DumpMargin is what an emit_event answer carries besides the package's
// dump: the protocol envelope and the event context (sender, group, query
// ids and the message chain twice, in message_event and message_chain),
// 987 bytes with an empty text in runtimetest's GroupMessageReceived, and
// the install_source and install_info LangBot fills (about 130 bytes for
// an upload). 1.5 KiB leaves about 400 bytes for the text: a message of
// up to about 200 Latin or 35 Chinese characters (6 bytes each as \uXXXX,
// twice) keeps the answer of the largest allowed dump in one frame.
const DumpMargin = 1536

// DumpBudget is the largest dump (RuntimeDump) a package may have: every
// chat message's emit_event answer carries it, and must stay one frame.
const DumpBudget = RuntimeChunkBytes - DumpMargin

// RuntimeDump is the plugin dump LangBot's runtime 0.5.5 puts into the
// answer of every emit_event the package handles (emitted_plugins[i],
// PluginContainer.model_dump in runtime/plugin/container.py), serialised
// as the runtime sends it: Python's json.dumps defaults, ", " and ": "
// separators and every non-ASCII character as \uXXXX. The manifest and
// each component's manifest are the YAML documents as the runtime loads
// them (the plugin manifest with spec.pages added, as the SDK's
// populate_plugin_pages does); components come in generation order, the
// runtime's is the directory listing's, which changes no length. The parts
// LangBot fills at install time are left empty: install_source "",
// install_info {} (DumpMargin counts them) and plugin_config {} (the
// runtime's container keeps the config of registration, which is empty).
func (p *Package) RuntimeDump() []byte { return p.dump }

// dumpComponent is one component manifest: its path in the package and
// its document.
type dumpComponent struct {
	relPath string
	doc     ymap
}

// owner is the owner the SDK's plugin process gives every manifest it
// loads (cli/commands/runplugin.py).
const owner = "builtin"

// runtimeDump builds the dump of RuntimeDump from the plugin manifest's
// document, its pages entries and the component documents.
func runtimeDump(manifest ymap, pages yseq, comps []dumpComponent) []byte {
	m := make(ymap, 0, len(manifest))
	for _, e := range manifest {
		if e.k == "spec" {
			spec := append(ymap{}, e.v.(ymap)...)
			if pages == nil {
				pages = yseq{}
			}
			e = kv{"spec", append(spec, kv{"pages", pages})}
		}
		m = append(m, e)
	}
	manifestDump := func(doc ymap, rel string) node {
		return ymap{{"owner", str(owner)}, {"manifest", doc}, {"rel_path", str(rel)}}
	}
	cs := yseq{}
	for _, c := range comps {
		cs = append(cs, ymap{{"manifest", manifestDump(c.doc, c.relPath)}, {"component_instance", yscalar{nil}}, {"component_config", ymap{}}})
	}
	dump := ymap{
		{"debug", yscalar{false}},
		{"install_source", str("")},
		{"install_info", ymap{}},
		{"manifest", manifestDump(m, "manifest.yaml")},
		{"plugin_instance", yscalar{nil}},
		{"enabled", yscalar{true}},
		{"priority", yscalar{0}},
		{"plugin_config", ymap{}},
		{"status", str("initialized")},
		{"components", cs},
	}
	var b bytes.Buffer
	writePyJSON(&b, dump)
	return b.Bytes()
}

// writePyJSON writes n as Python's json.dumps(n) with its defaults does.
func writePyJSON(b *bytes.Buffer, n node) {
	switch x := n.(type) {
	case ymap:
		b.WriteByte('{')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			writePyString(b, e.k)
			b.WriteString(": ")
			writePyJSON(b, e.v)
		}
		b.WriteByte('}')
	case yseq:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			writePyJSON(b, e)
		}
		b.WriteByte(']')
	case yscalar:
		switch v := x.v.(type) {
		case nil:
			b.WriteString("null")
		case string:
			writePyString(b, v)
		case bool:
			b.WriteString(strconv.FormatBool(v))
		case json.Number:
			b.WriteString(v.String())
		case int:
			b.WriteString(strconv.Itoa(v))
		default:
			writePyString(b, fmt.Sprint(v)) // as scalarText: not produced by this package
		}
	}
}

// writePyString writes s as json.dumps with ensure_ascii does: the short
// escapes for " \ \n \r \t \b \f, everything else outside ' '..'~' as
// \uXXXX in lower-case hex, above U+FFFF as a surrogate pair.
func writePyString(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			switch {
			case r >= ' ' && r <= '~':
				b.WriteRune(r)
			case r > 0xFFFF:
				r1, r2 := utf16.EncodeRune(r)
				fmt.Fprintf(b, `\u%04x\u%04x`, r1, r2)
			default:
				fmt.Fprintf(b, `\u%04x`, r)
			}
		}
	}
	b.WriteByte('"')
}
