package model

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Content limits (spec §3.4, §11).
const (
	MaxAttachmentBytes = 10 << 20 // decoded
	MaxTextBytes       = 64 << 10 // per text part
	MaxParts           = 20
	MaxFileNameBytes   = 200
)

// Omission reasons of attachment parts.
const (
	OmittedTooLarge = "too_large"
	OmittedInvalid  = "invalid"
)

// Content is what a message chain holds for recording (spec §3.4).
type Content struct {
	Parts       []Part   // text part first, then attachments and others; Data set on blob parts
	Truncated   bool     // the text part was cut to MaxTextBytes
	TriggerText string   // the Plain texts only
	AtTargets   []string // the At components' targets, as text
}

// component is the union of the message chain component fields we read.
type component struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Target  json.RawMessage `json:"target"`
	Display string          `json:"display"`
	URL     string          `json:"url"`
	Base64  string          `json:"base64"`
	Name    string          `json:"name"`
}

// Chain is a parsed message chain. Parsing copies the components' fields but
// decodes no attachment, so the decision can read the trigger text cheaply.
type Chain struct {
	comps []component
}

// ParseChain parses a message chain (a JSON array of components). Components
// that are not objects, or a value that is not an array, never fail: they
// become "Unknown" components or an empty chain.
func ParseChain(chain json.RawMessage) Chain {
	// one pass in the common case: every component decodes
	var direct []component
	if err := json.Unmarshal(chain, &direct); err == nil {
		return Chain{comps: direct}
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(chain, &raws); err != nil {
		return Chain{}
	}
	comps := make([]component, 0, len(raws))
	for _, raw := range raws {
		var comp component
		if err := json.Unmarshal(raw, &comp); err != nil {
			comp = component{Type: "Unknown"}
		}
		comps = append(comps, comp)
	}
	return Chain{comps: comps}
}

// TriggerText is the concatenation of the chain's Plain texts (spec §3.4
// rule 4).
func (c Chain) TriggerText() string {
	var b strings.Builder
	for _, comp := range c.comps {
		if comp.Type == "Plain" {
			b.WriteString(comp.Text)
		}
	}
	return b.String()
}

// ExtractContent turns a message chain into the parts of an entry; see
// Chain.Extract.
func ExtractContent(chain json.RawMessage) Content {
	return ParseChain(chain).Extract()
}

// Extract turns the chain into the parts of an entry (spec §3.4): the
// trimmed text part first, then images, files and other components in
// chain order, at most 20 parts. Base64 attachments are decoded into
// Part.Data.
func (c Chain) Extract() Content {
	var out Content
	var text strings.Builder
	var rest []Part
	for _, comp := range c.comps {
		switch comp.Type {
		case "Source":
		case "Plain":
			text.WriteString(comp.Text)
		case "At":
			target, _ := IDText(comp.Target)
			out.AtTargets = append(out.AtTargets, target)
			shown := comp.Display
			if shown == "" {
				shown = target
			}
			text.WriteString("@" + shown + " ")
		case "AtAll":
			text.WriteString("@All ")
		case "Image":
			if len(rest) < MaxParts {
				rest = append(rest, attachmentPart(PartImage, comp))
			}
		case "File":
			if len(rest) < MaxParts {
				rest = append(rest, attachmentPart(PartFile, comp))
			}
		default:
			if len(rest) < MaxParts {
				name := comp.Type
				if name == "" || len(name) > 64 || !utf8.ValidString(name) {
					name = "Unknown"
				}
				rest = append(rest, Part{Type: PartOther, Component: name})
			}
		}
	}
	out.TriggerText = c.TriggerText()
	if t := strings.TrimSpace(text.String()); t != "" {
		t, cut := CutText(t, MaxTextBytes)
		out.Truncated = cut
		out.Parts = append(out.Parts, Part{Type: PartText, Text: t})
	}
	out.Parts = append(out.Parts, rest...)
	if len(out.Parts) > MaxParts {
		out.Parts = out.Parts[:MaxParts]
	}
	return out
}

// attachmentPart is an image or file part: a URL part, or decoded bytes
// waiting for the object store, or an omission.
func attachmentPart(kind string, comp component) Part {
	p := Part{Type: kind}
	if kind == PartFile {
		p.Name = SanitizeFileName(comp.Name)
	}
	if u := strings.TrimSpace(comp.URL); u != "" && validURL(u) {
		p.URL = u
		return p
	}
	if comp.Base64 == "" {
		p.Omitted = OmittedInvalid
		return p
	}
	data, err := DecodeDataURL(comp.Base64, MaxAttachmentBytes)
	switch {
	case err == ErrTooLarge:
		p.Omitted = OmittedTooLarge
	case err != nil:
		p.Omitted = OmittedInvalid
	default:
		p.Data = data
		p.Size = int64(len(data))
		p.Mime = SniffMime(data)
		if kind == PartImage && !RasterImage(p.Mime) {
			// bytes that are no raster image (HTML, SVG, anything a
			// browser could run) are kept as a download, never shown
			p.Type, p.Name = PartFile, "image"
		}
	}
	return p
}

func validURL(u string) bool {
	l := strings.ToLower(u)
	if !strings.HasPrefix(l, "https://") && !strings.HasPrefix(l, "http://") {
		return false
	}
	return len(u) <= 4096 && utf8.ValidString(u) && !strings.ContainsFunc(u, unicode.IsControl)
}

type contentError string

func (e contentError) Error() string { return string(e) }

// Errors of DecodeDataURL: ErrTooLarge is an attachment over its limit.
const (
	ErrTooLarge = contentError("takeover: attachment too large")
	errBadData  = contentError("takeover: attachment not valid base64")
)

// DecodeDataURL decodes a data URL ("data:<mime>;base64,<data>") or bare
// base64 (standard or URL alphabet, padded or not). Data over limit decoded
// bytes gives ErrTooLarge without decoding it. The decoded bytes are the
// only allocation of their size: s is read in place.
func DecodeDataURL(s string, limit int) ([]byte, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "data:") {
		i := strings.IndexByte(s, ',')
		if i < 0 || !strings.HasSuffix(s[:i], ";base64") {
			return nil, errBadData
		}
		s = s[i+1:]
	}
	if strings.ContainsAny(s, " \r\n\t") {
		s = strings.Map(func(r rune) rune {
			if r == ' ' || r == '\r' || r == '\n' || r == '\t' {
				return -1
			}
			return r
		}, s)
	}
	return decodeBase64(len(s), len(strings.TrimRight(s, "=")), func() io.Reader { return strings.NewReader(s) }, limit)
}

// DecodeDataURLBytes is DecodeDataURL of b, read in place: a transport
// that holds a request's bytes decodes an attachment from them without a
// string copy.
func DecodeDataURLBytes(b []byte, limit int) ([]byte, error) {
	b = bytes.TrimSpace(b)
	if bytes.HasPrefix(b, []byte("data:")) {
		i := bytes.IndexByte(b, ',')
		if i < 0 || !bytes.HasSuffix(b[:i], []byte(";base64")) {
			return nil, errBadData
		}
		b = b[i+1:]
	}
	if bytes.ContainsAny(b, " \r\n\t") {
		return DecodeDataURL(string(b), limit)
	}
	return decodeBase64(len(b), len(bytes.TrimRight(b, "=")), func() io.Reader { return bytes.NewReader(b) }, limit)
}

// decodeBase64 decodes base64 of n characters (unpadded without its
// padding) in any of the four alphabets, reading it from a fresh reader per
// alphabet into one buffer of the largest decoded size; over limit decoded
// bytes it is ErrTooLarge without decoding.
func decodeBase64(n, unpadded int, open func() io.Reader, limit int) ([]byte, error) {
	if n == 0 {
		return nil, errBadData
	}
	if base64.RawStdEncoding.DecodedLen(unpadded) > limit {
		return nil, ErrTooLarge
	}
	dst := make([]byte, base64.RawStdEncoding.DecodedLen(n))
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if m, ok := decodeInto(dst, enc, open()); ok {
			return dst[:m:m], nil
		}
	}
	return nil, errBadData
}

// decodeInto decodes s with enc into dst, which has room for all of it,
// reading s through a streaming decoder so that it is never copied. It
// reports whether s is valid in enc, as enc.DecodeString would.
func decodeInto(dst []byte, enc *base64.Encoding, s io.Reader) (int, bool) {
	d := base64.NewDecoder(enc, s)
	n := 0
	for {
		if n == len(dst) {
			// all of it decoded: only the end may follow
			var one [1]byte
			m, err := d.Read(one[:])
			return n, m == 0 && err == io.EOF
		}
		m, err := d.Read(dst[n:])
		n += m
		if err == io.EOF {
			return n, true
		}
		if err != nil {
			return 0, false
		}
	}
}

// SniffMime is the content type of data, sniffed from its bytes.
func SniffMime(data []byte) string {
	m := http.DetectContentType(data)
	if i := strings.IndexByte(m, ';'); i >= 0 {
		m = m[:i]
	}
	return m
}

// rasterImages are the image types a console shows inline: raster formats
// that http.DetectContentType recognises by their magic bytes and that
// carry no script. SVG is XML (a document with script), so it is not one.
var rasterImages = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// RasterImage reports whether mime, as SniffMime gives it, is a raster
// image kept and shown as an image (png, jpeg, gif, webp). It is the one
// check of recording, import and the operator's reply; anything else that
// arrives as an image is refused (reply) or kept as a file (recording).
func RasterImage(mime string) bool { return rasterImages[mime] }

// DataURL encodes bytes as a data URL of the given mime type, in one
// allocation of the URL's size.
func DataURL(mime string, data []byte) string {
	var b strings.Builder
	b.Grow(len("data:;base64,") + len(mime) + base64.StdEncoding.EncodedLen(len(data)))
	b.WriteString("data:" + mime + ";base64,")
	w := base64.NewEncoder(base64.StdEncoding, &b)
	_, _ = w.Write(data)
	_ = w.Close()
	return b.String()
}

// invisible reports whether r is a bidi control or a zero-width character:
// in a name they reorder or hide what an operator reads ("invoice<U+202E>fdp.exe"
// shows as "invoiceexe.pdf"). The zero-width joiner stays: emoji sequences
// need it and it reorders nothing.
func invisible(r rune) bool {
	switch {
	case r == 0x061C || r == 0x200E || r == 0x200F: // ALM, LRM, RLM
	case 0x202A <= r && r <= 0x202E: // LRE, RLE, PDF, LRO, RLO
	case 0x2066 <= r && r <= 0x2069: // LRI, RLI, FSI, PDI
	case r == 0x200B || r == 0x200C || r == 0x2060 || r == 0xFEFF || r == 0x180E: // ZWSP, ZWNJ, WJ, BOM, MVS
	default:
		return false
	}
	return true
}

// CleanName removes bidi controls, zero-width characters and other
// control characters from a display name (a sender's or a group's).
func CleanName(name string) string {
	return strings.Map(func(r rune) rune {
		if invisible(r) || unicode.IsControl(r) {
			return -1
		}
		return r
	}, name)
}

// SanitizeFileName cuts a file name to its base name, removes control,
// bidi and zero-width characters and path separators, and keeps at most
// 200 bytes; the default is "file" (spec §7.4 rule 1).
func SanitizeFileName(name string) string {
	name = strings.ToValidUTF8(name, "")
	name = strings.ReplaceAll(name, "\\", "/")
	name = path.Base(name)
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || invisible(r) || r == '/' {
			return -1
		}
		return r
	}, name)
	name = strings.TrimSpace(name)
	if len(name) > MaxFileNameBytes {
		name = strings.ToValidUTF8(name[:MaxFileNameBytes], "")
		for !utf8.ValidString(name) {
			name = name[:len(name)-1]
		}
	}
	if name == "" || name == "." || name == ".." {
		return "file"
	}
	return name
}

// CutText cuts s to at most n bytes at a character boundary and reports
// whether it did.
func CutText(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i], true
}

// EventData is the part of an event's data the service reads.
type EventData struct {
	LauncherType string          `json:"launcher_type"`
	LauncherID   json.RawMessage `json:"launcher_id"`
	SenderID     json.RawMessage `json:"sender_id"`
	MessageEvent *struct {
		Sender *struct {
			Nickname   string `json:"nickname"`
			Remark     string `json:"remark"`
			MemberName string `json:"member_name"`
			Group      *struct {
				Name string `json:"name"`
			} `json:"group"`
		} `json:"sender"`
		MessageChain json.RawMessage `json:"message_chain"`
	} `json:"message_event"`
	MessageChain json.RawMessage `json:"message_chain"`
	ResponseText string          `json:"response_text"`
}

// Chain is the event's message chain: data.message_chain, else the message
// event's.
func (d *EventData) Chain() json.RawMessage {
	if c := bytes.TrimSpace(d.MessageChain); len(c) > 0 && string(c) != "null" {
		return c
	}
	if d.MessageEvent != nil {
		return d.MessageEvent.MessageChain
	}
	return nil
}

// Sender returns the sender id and display name (spec §3.4 rule 5).
func (d *EventData) Sender() (id, name string) {
	id, _ = IDText(d.SenderID)
	if strings.ContainsFunc(id, unicode.IsControl) || len(id) > maxLauncherIDLen {
		id = ""
	}
	name = id
	if d.MessageEvent == nil || d.MessageEvent.Sender == nil {
		return id, name
	}
	s := d.MessageEvent.Sender
	choices := []string{s.Nickname, s.Remark}
	if d.LauncherType == LauncherGroup {
		choices = []string{s.MemberName}
	}
	for _, c := range choices {
		if c = CleanName(c); c != "" {
			return id, c
		}
	}
	return id, name
}

// SessionName is the session's display name: a person session takes the
// sender's name, a group session the group's name, else the launcher id.
func (d *EventData) SessionName(launcherID string) string {
	if d.LauncherType == LauncherPerson {
		_, name := d.Sender()
		if name == "" {
			return launcherID
		}
		return name
	}
	if d.MessageEvent != nil && d.MessageEvent.Sender != nil && d.MessageEvent.Sender.Group != nil {
		if name := CleanName(d.MessageEvent.Sender.Group.Name); name != "" {
			return name
		}
	}
	return launcherID
}
