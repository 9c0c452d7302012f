package console_test

import (
	"bytes"
	"regexp"
	"testing"

	"github.com/langbot-nats/plugins/services/takeover/console"
)

// TestPageHTMLSelfContained: the page for LangBot is one file (a blob: URL
// resolves nothing relative), switches app.js to the langbot transport,
// carries both catalogues, and is the same bytes every time (the package
// builder is deterministic).
func TestPageHTMLSelfContained(t *testing.T) {
	a, err := console.PageHTML()
	if err != nil {
		t.Fatal(err)
	}
	b, err := console.PageHTML()
	if err != nil || !bytes.Equal(a, b) {
		t.Fatalf("two builds differ (%v)", err)
	}
	if m := regexp.MustCompile(`(?i)<(script|link|img|iframe)[^>]+(src|href)=`).Find(a); m != nil {
		t.Fatalf("the page references another file: %s", m)
	}
	for _, want := range []string{`data-transport="langbot"`, `<style>`, `id="catalogs"`, `"zh_Hans":`, `"en_US":`, `PAGE = document.documentElement.dataset.transport === 'langbot'`} {
		if !bytes.Contains(a, []byte(want)) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if n := bytes.Count(a, []byte("</script>")); n != 2 {
		t.Errorf("%d script ends, want 2 (catalogues and app.js)", n)
	}
}
