package console

import (
	"bytes"
	"embed"
	"io/fs"
	"mime"
	"net/http"
	"path"

	"github.com/langbot-nats/plugins/pkg/i18n"
)

// assets are the page's files and its two catalogues.
//
//go:embed web i18n
var assets embed.FS

// Catalog loads the console's UI catalogues (i18n/en_US.json and
// i18n/zh_Hans.json), checking that they have the same keys and
// placeholders.
func Catalog() (*i18n.Catalog, error) { return i18n.Load(assets, "i18n") }

// Assets returns the embedded page files (web/...) and catalogues
// (i18n/...), for tests that check them.
func Assets() fs.FS { return assets }

// serveAsset serves the page and its files; index.html learns whether test
// hooks are on from an attribute, since the CSP forbids inline scripts.
func (h *Handler) serveAsset(w http.ResponseWriter, r *http.Request, name string) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeError(w, http.StatusMethodNotAllowed, "bad_request", "", "use GET")
		return
	}
	if name == "" {
		name = "index.html"
	}
	file := path.Join("web", name)
	if dir, base := path.Split(name); dir == "i18n/" {
		file = path.Join("i18n", base)
	}
	data, err := fs.ReadFile(assets, file)
	if err != nil || path.Clean(name) != name {
		http.NotFound(w, r)
		return
	}
	if name == "index.html" {
		if h.cfg.TestHooks {
			data = bytes.Replace(data, []byte(`data-hooks="off"`), []byte(`data-hooks="on"`), 1)
		}
		w.Header().Set("Cache-Control", "no-store")
	} else {
		w.Header().Set("Cache-Control", "no-cache")
	}
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ct)
	_, _ = w.Write(data)
}
