package console_test

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestNamesCleanedAndIsolated: a sender name and a file name carrying a
// right-to-left override and zero-width characters reach the console
// without them, and the console renders names and file links isolated
// (unicode-bidi: isolate), so text left over from older records cannot
// reorder the page around it.
func TestNamesCleanedAndIsolated(t *testing.T) {
	h := newHarness(t)
	bind, sc := h.install("bidi", `{}`)
	chain, _ := json.Marshal([]map[string]string{
		{"type": "Plain", "text": "see attached"},
		{"type": "File", "name": "invoice\u202efdp.exe", "base64": base64.StdEncoding.EncodeToString([]byte("MZ not really"))},
	})
	h.event(bind, `{}`, "person", "5151", "5151", "ad\u200bmin\u202e", chain)
	sid := sidOf("person", "5151")
	b := newBrowser(t, h)
	b.open(h.token(sc, "alice", time.Hour))
	b.show(sid)
	b.until("the file link", `document.querySelector('[data-testid=msg-file]')`)
	var got struct {
		Name, File       string
		NameBidi, FileBd string
	}
	b.eval(`(() => { const n = document.querySelector('.s-name'), f = document.querySelector('[data-testid=msg-file]');
		return { name: n.textContent, file: f.textContent, nameBidi: getComputedStyle(n).unicodeBidi, fileBd: getComputedStyle(f).unicodeBidi }; })()`, &got)
	for _, s := range []string{got.Name, got.File} {
		if strings.ContainsAny(s, "\u202e\u200b") {
			t.Errorf("%q still holds a bidi or zero-width control", s)
		}
	}
	if got.Name != "admin" || got.File != "invoicefdp.exe" {
		t.Errorf("name %q, file %q; want admin, invoicefdp.exe", got.Name, got.File)
	}
	if got.NameBidi != "isolate" || got.FileBd != "isolate" {
		t.Errorf("unicode-bidi of the name %q, of the file link %q; want isolate", got.NameBidi, got.FileBd)
	}
}
