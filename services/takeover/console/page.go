package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
)

// PageHTML is the console as one self-contained HTML document for the
// host's page (LangBot loads it into a sandboxed iframe from a blob: URL,
// so nothing relative resolves and there is no storage or network). It is
// built from the same web/ sources as the standalone console: app.css and
// app.js are inlined, both catalogues are embedded as JSON, and the root
// element's data-transport="langbot" switches app.js to the langbot:api
// postMessage transport with polling. The output depends only on the
// embedded files, so the package builder stays deterministic.
func PageHTML() ([]byte, error) {
	read := func(name string) ([]byte, error) {
		b, err := fs.ReadFile(assets, name)
		if err != nil {
			return nil, fmt.Errorf("console page: %w", err)
		}
		return b, nil
	}
	index, err := read("web/index.html")
	if err != nil {
		return nil, err
	}
	css, err := read("web/app.css")
	if err != nil {
		return nil, err
	}
	js, err := read("web/app.js")
	if err != nil {
		return nil, err
	}
	cats := map[string]json.RawMessage{}
	for _, lang := range []string{"en_US", "zh_Hans"} {
		b, err := read("i18n/" + lang + ".json")
		if err != nil {
			return nil, err
		}
		var v map[string]string
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, fmt.Errorf("console page: i18n/%s.json: %w", lang, err)
		}
		// json.Marshal escapes <, > and &, so no catalogue text can end
		// the script element it sits in
		if cats[lang], err = json.Marshal(v); err != nil {
			return nil, fmt.Errorf("console page: %w", err)
		}
	}
	catJSON, err := json.Marshal(cats)
	if err != nil {
		return nil, fmt.Errorf("console page: %w", err)
	}
	// an inline element ends at the first "</style" or "</script": the
	// sources must not contain one
	if bytes.Contains(bytes.ToLower(css), []byte("</style")) || bytes.Contains(bytes.ToLower(js), []byte("</script")) {
		return nil, fmt.Errorf("console page: app.css or app.js contains a closing tag")
	}
	out := index
	for _, r := range []struct{ old, new []byte }{
		{[]byte(`<html lang="en" data-hooks="off">`), []byte(`<html lang="en" data-hooks="off" data-transport="langbot">`)},
		{[]byte(`<link rel="stylesheet" href="app.css">`), append(append([]byte("<style>\n"), css...), "</style>"...)},
		{[]byte(`<script src="app.js" defer></script>`), nil}, // moved to the end of body: defer does not apply inline
	} {
		if bytes.Count(out, r.old) != 1 {
			return nil, fmt.Errorf("console page: index.html lacks %s", r.old)
		}
		out = bytes.Replace(out, r.old, r.new, 1)
	}
	tail := []byte("</body>")
	if bytes.Count(out, tail) != 1 {
		return nil, fmt.Errorf("console page: index.html lacks </body>")
	}
	var scripts bytes.Buffer
	scripts.WriteString(`<script type="application/json" id="catalogs">`)
	scripts.Write(catJSON)
	scripts.WriteString("</script>\n<script>\n")
	scripts.Write(js)
	scripts.WriteString("</script>\n</body>")
	return bytes.Replace(out, tail, scripts.Bytes(), 1), nil
}
