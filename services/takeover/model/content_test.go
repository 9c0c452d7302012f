package model_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/langbot-nats/plugins/services/takeover/model"
)

// pngBytes is a minimal PNG signature followed by padding.
var pngBytes = append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 32)...)

func TestContentExtraction(t *testing.T) {
	png64 := base64.StdEncoding.EncodeToString(pngBytes)
	chain := `[{"type":"Source","id":1,"timestamp":2},
		{"type":"Plain","text":"  hi "},{"type":"At","target":123,"display":""},{"type":"At","target":"u9","display":"Ann"},
		{"type":"AtAll"},{"type":"Plain","text":"there  "},
		{"type":"Image","url":"https://img.example/a.png"},
		{"type":"Image","base64":"data:image/png;base64,` + png64 + `"},
		{"type":"Image","base64":"` + png64 + `"},
		{"type":"Image","base64":"!!!not base64"},
		{"type":"Image","image_id":"x"},
		{"type":"File","name":"../../etc/passwd","url":"https://f.example/p"},
		{"type":"File","name":"a.pdf","base64":"` + base64.StdEncoding.EncodeToString([]byte("%PDF-1.4 x")) + `"},
		{"type":"Voice","url":"https://v"}, 7]`
	c := model.ExtractContent(json.RawMessage(chain))
	want := []model.Part{
		{Type: "text", Text: "hi @123 @Ann @All there"},
		{Type: "image", URL: "https://img.example/a.png"},
		{Type: "image", Mime: "image/png", Size: int64(len(pngBytes))},
		{Type: "image", Mime: "image/png", Size: int64(len(pngBytes))},
		{Type: "image", Omitted: "invalid"},
		{Type: "image", Omitted: "invalid"},
		{Type: "file", Name: "passwd", URL: "https://f.example/p"},
		{Type: "file", Name: "a.pdf", Mime: "application/pdf", Size: 10},
		{Type: "other", Component: "Voice"},
		{Type: "other", Component: "Unknown"},
	}
	if len(c.Parts) != len(want) {
		t.Fatalf("parts = %d, want %d: %+v", len(c.Parts), len(want), c.Parts)
	}
	for i := range want {
		got := c.Parts[i]
		data := got.Data
		got.Data = nil
		if !partEqual(got, want[i]) {
			t.Errorf("part %d = %+v, want %+v", i, got, want[i])
		}
		if want[i].Size > 0 && int64(len(data)) != want[i].Size {
			t.Errorf("part %d holds %d bytes", i, len(data))
		}
	}
	if c.TriggerText != "  hi there  " {
		t.Errorf("trigger text %q", c.TriggerText)
	}
	if strings.Join(c.AtTargets, ",") != "123,u9" {
		t.Errorf("at targets %v", c.AtTargets)
	}
	if p := model.PreviewOf(c.Parts); p.Kind != "text" || p.Text != "hi @123 @Ann @All there" {
		t.Errorf("preview %+v", p)
	}
	if p := model.PreviewOf(c.Parts[1:]); p.Kind != "image" {
		t.Errorf("image preview %+v", p)
	}
	if p := model.PreviewOf(c.Parts[8:]); p.Kind != "other" {
		t.Errorf("other preview %+v", p)
	}
}

func TestContentLimits(t *testing.T) {
	t.Run("no parts", func(t *testing.T) {
		for _, chain := range []string{`[]`, `[{"type":"Source"},{"type":"Plain","text":"  "}]`, `{}`, `null`, `garbage`} {
			if c := model.ExtractContent(json.RawMessage(chain)); len(c.Parts) != 0 {
				t.Errorf("%s gave parts %+v", chain, c.Parts)
			}
		}
	})
	t.Run("at most 20 parts", func(t *testing.T) {
		var b strings.Builder
		b.WriteString(`[{"type":"Plain","text":"x"}`)
		for range 30 {
			b.WriteString(`,{"type":"Face"}`)
		}
		b.WriteString(`]`)
		if c := model.ExtractContent(json.RawMessage(b.String())); len(c.Parts) != 20 || c.Parts[0].Type != "text" {
			t.Fatalf("parts = %d", len(c.Parts))
		}
	})
	t.Run("text cut at 64 KiB on a character boundary", func(t *testing.T) {
		long := strings.Repeat("é", 40000)
		chain, _ := json.Marshal([]map[string]string{{"type": "Plain", "text": long}})
		c := model.ExtractContent(chain)
		if !c.Truncated || len(c.Parts[0].Text) > 64<<10 || !utf8.ValidString(c.Parts[0].Text) {
			t.Fatalf("truncated=%v len=%d", c.Truncated, len(c.Parts[0].Text))
		}
	})
	t.Run("image over 10 MiB omitted", func(t *testing.T) {
		big := base64.StdEncoding.EncodeToString(make([]byte, 10<<20+1))
		chain, _ := json.Marshal([]map[string]string{{"type": "Image", "base64": big}})
		c := model.ExtractContent(chain)
		if len(c.Parts) != 1 || c.Parts[0].Omitted != "too_large" || c.Parts[0].Data != nil {
			t.Fatalf("parts %+v", c.Parts[0].Omitted)
		}
		exact := base64.StdEncoding.EncodeToString(make([]byte, 10<<20))
		chain, _ = json.Marshal([]map[string]string{{"type": "Image", "base64": exact}})
		if c := model.ExtractContent(chain); c.Parts[0].Size != 10<<20 {
			t.Fatalf("10 MiB exactly: %+v", c.Parts[0].Omitted)
		}
	})
}

func TestEventNames(t *testing.T) {
	var person, group, bare model.EventData
	_ = json.Unmarshal([]byte(`{"launcher_type":"person","launcher_id":42,"sender_id":42,"message_event":{"sender":{"nickname":"","remark":"Bob"}}}`), &person)
	_ = json.Unmarshal([]byte(`{"launcher_type":"group","launcher_id":"g1","sender_id":"7","message_event":{"sender":{"member_name":"Ann","group":{"name":"Support"}}}}`), &group)
	_ = json.Unmarshal([]byte(`{"launcher_type":"group","launcher_id":"g1","sender_id":7}`), &bare)
	if id, name := person.Sender(); id != "42" || name != "Bob" || person.SessionName("42") != "Bob" {
		t.Errorf("person: %s %s %s", id, name, person.SessionName("42"))
	}
	if id, name := group.Sender(); id != "7" || name != "Ann" || group.SessionName("g1") != "Support" {
		t.Errorf("group: %s %s %s", id, name, group.SessionName("g1"))
	}
	if id, name := bare.Sender(); id != "7" || name != "7" || bare.SessionName("g1") != "g1" {
		t.Errorf("bare: %s %s", id, name)
	}
}

func TestSanitizeFileName(t *testing.T) {
	for in, want := range map[string]string{
		"a.pdf": "a.pdf", "../x/y.txt": "y.txt", `C:\dir\r.doc`: "r.doc", "": "file", "..": "file",
		"a\x00b\nc": "abc", strings.Repeat("é", 150): strings.Repeat("é", 100),
	} {
		if got := model.SanitizeFileName(in); got != want {
			t.Errorf("SanitizeFileName(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzExtractContent checks the invariants of extraction on any input: at
// most 20 parts, the text part only first, bounded valid text, blob data
// that matches its size, and that the text part is the trimmed join of the
// chain's text-bearing components (an independent re-computation).
func FuzzExtractContent(f *testing.F) {
	f.Add([]byte(`[{"type":"Plain","text":"hello"}]`))
	f.Add([]byte(`[{"type":"Source","id":1},{"type":"At","target":1,"display":"x"},{"type":"AtAll"},{"type":"Image","url":"https://a/b.png"}]`))
	f.Add([]byte(`[{"type":"Image","base64":"data:image/png;base64,iVBORw0KGgo="},{"type":"File","name":"a/../b","base64":"YWJj"}]`))
	f.Add([]byte(`[{"type":"Voice"},1,"x",null,[],{"type":""}]`))
	f.Add([]byte(`{"type":"Plain"}`))
	f.Fuzz(func(t *testing.T, chain []byte) {
		c := model.ExtractContent(chain)
		if len(c.Parts) > 20 {
			t.Fatalf("%d parts", len(c.Parts))
		}
		for i, p := range c.Parts {
			switch p.Type {
			case "text":
				if i != 0 || p.Text == "" || p.Text != strings.TrimSpace(p.Text) || len(p.Text) > 64<<10 {
					t.Fatalf("bad text part %d", i)
				}
			case "image", "file":
				if int64(len(p.Data)) != p.Size || len(p.Data) > 10<<20 {
					t.Fatalf("part %d size %d data %d", i, p.Size, len(p.Data))
				}
				set := 0
				for _, b := range []bool{p.URL != "", p.Data != nil, p.Omitted != ""} {
					if b {
						set++
					}
				}
				if set != 1 && !(p.Data != nil && len(p.Data) == 0) {
					t.Fatalf("part %d is not exactly one of url, data, omitted: %+v", i, p)
				}
			case "other":
				if p.Component == "" {
					t.Fatal("other part without component")
				}
			default:
				t.Fatalf("part type %q", p.Type)
			}
		}
		// Oracle: recompute the text from the components.
		var comps []map[string]json.RawMessage
		if json.Unmarshal(chain, &comps) != nil {
			var any []json.RawMessage
			if json.Unmarshal(chain, &any) != nil && len(c.Parts) != 0 {
				t.Fatal("parts from a non-array")
			}
			return
		}
		var b bytes.Buffer
		for _, m := range comps {
			for k := range m {
				for _, f := range []string{"type", "text", "display", "target"} {
					if k != f && strings.EqualFold(k, f) {
						return // encoding/json matches keys case-insensitively; the oracle does not
					}
				}
			}
			var typ, text, display string
			_ = json.Unmarshal(m["type"], &typ)
			switch typ {
			case "Plain":
				if json.Unmarshal(m["text"], &text) != nil {
					return // a bad field makes the component Unknown; skip the oracle
				}
				b.WriteString(text)
			case "At":
				if json.Unmarshal(m["display"], &display) != nil {
					return
				}
				if display == "" {
					var target json.RawMessage = m["target"]
					var s string
					if json.Unmarshal(target, &s) == nil {
						display = s
					} else if len(target) > 0 && (target[0] == '-' || target[0] >= '0' && target[0] <= '9') {
						display = string(target)
					}
				}
				b.WriteString("@" + display + " ")
			case "AtAll":
				b.WriteString("@All ")
			}
		}
		want := strings.TrimSpace(b.String())
		got := ""
		if len(c.Parts) > 0 && c.Parts[0].Type == "text" {
			got = c.Parts[0].Text
		}
		if len(want) <= 64<<10 && got != want && utf8.ValidString(want) {
			t.Fatalf("text %q, oracle %q", got, want)
		}
	})
}

func partEqual(a, b model.Part) bool {
	a.Data, b.Data = nil, nil
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// TestNonRasterImageRecordedAsFile: an "image" whose bytes are HTML, SVG,
// BMP or unknown is kept as a file download named "image", never as an
// image; a real PNG stays an image.
func TestNonRasterImageRecordedAsFile(t *testing.T) {
	for name, data := range map[string][]byte{
		"html": []byte("<html><script>alert(1)</script></html>"),
		"svg":  []byte(`<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`),
		"bmp":  append([]byte("BM"), make([]byte, 40)...),
		"blob": {0, 1, 2, 3},
		"png":  pngBytes,
	} {
		chain, _ := json.Marshal([]map[string]string{{"type": "Image", "base64": base64.StdEncoding.EncodeToString(data)}})
		c := model.ExtractContent(chain)
		if len(c.Parts) != 1 {
			t.Fatalf("%s: %d parts", name, len(c.Parts))
		}
		p := c.Parts[0]
		want := model.PartFile
		if name == "png" {
			want = model.PartImage
		}
		if p.Type != want || len(p.Data) != len(data) {
			t.Errorf("%s: part %s (mime %s, %d bytes), want %s with the bytes", name, p.Type, p.Mime, len(p.Data), want)
		}
		if want == model.PartFile && p.Name != "image" {
			t.Errorf("%s: file name %q, want image", name, p.Name)
		}
	}
}

// TestNamesLoseBidiAndZeroWidth: file names and display names lose bidi
// controls and zero-width characters (an RLO made "invoice\u202efdp.exe" read
// as "invoiceexe.pdf"); the zero-width joiner of an emoji stays.
func TestNamesLoseBidiAndZeroWidth(t *testing.T) {
	for in, want := range map[string]string{
		"invoice\u202efdp.exe":              "invoicefdp.exe",
		"a\u200bb\u200cc\u2060d\ufeffe":     "abcde",
		"\u2066x\u2069\u200e\u200f\u061c":   "x",
		"family \U0001F468\u200d\U0001F469": "family \U0001F468\u200d\U0001F469",
	} {
		if got := model.SanitizeFileName(in); got != want {
			t.Errorf("SanitizeFileName(%q) = %q, want %q", in, got, want)
		}
		if got := model.CleanName(in); got != want {
			t.Errorf("CleanName(%q) = %q, want %q", in, got, want)
		}
	}
	var d model.EventData
	raw := `{"launcher_type":"group","launcher_id":"g1","sender_id":"u1","message_event":{"sender":{"member_name":"Bob\u202e\u200b","group":{"name":"\u202e\u2066"}}}}`
	if err := json.Unmarshal([]byte(raw), &d); err != nil {
		t.Fatal(err)
	}
	if _, name := d.Sender(); name != "Bob" {
		t.Errorf("sender name %q, want Bob", name)
	}
	if name := d.SessionName("g1"); name != "g1" {
		t.Errorf("a group name of only controls: %q, want the launcher id g1", name)
	}
}

// FuzzDecodeDataURL checks the decoder, which reads its input through a
// streaming decoder into one buffer, against the four DecodeString
// attempts it replaced.
func FuzzDecodeDataURL(f *testing.F) {
	for _, s := range []string{"aGk=", "aGk", "aG-_", "AA==AA==", "a", "data:x;base64,aGk=", "////", "aGk=\n", "YQ==YQ"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := model.DecodeDataURL(s, 1<<20)
		if gb, eb := model.DecodeDataURLBytes([]byte(s), 1<<20); !bytes.Equal(gb, got) || (eb == nil) != (err == nil) {
			t.Fatalf("%q: from bytes %q, %v; from the string %q, %v", s, gb, eb, got, err)
		}
		b := strings.TrimSpace(s)
		if strings.HasPrefix(b, "data:") {
			i := strings.IndexByte(b, ',')
			if i < 0 || !strings.HasSuffix(b[:i], ";base64") {
				if err == nil {
					t.Fatalf("%q: decoded a data URL that is not base64", s)
				}
				return
			}
			b = b[i+1:]
		}
		b = strings.NewReplacer(" ", "", "\r", "", "\n", "", "\t", "").Replace(b)
		var want []byte
		ok := false
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			if d, e := enc.DecodeString(b); e == nil && b != "" {
				want, ok = d, true
				break
			}
		}
		if ok != (err == nil) || !bytes.Equal(got, want) {
			t.Fatalf("%q: got %q, %v; DecodeString gives %q, %v", s, got, err, want, ok)
		}
	})
}
