package takeover

import (
	"strconv"
	"testing"

	"github.com/langbot-nats/plugins/services/takeover/model"
)

// Fuzz targets of unexported parsers, added by the reliability work
// (issue 9): the session list cursor and the import rows. Seeds are in
// testdata/fuzz/<target>.

func FuzzParseCursor(f *testing.F) {
	sid := model.SID(model.SessionKey("bot", "person", "1"))
	for _, s := range []string{"1700000000000_" + sid, "_", "", "x_" + sid, "-1_" + sid, "1_../../x", "99999999999999999999_" + sid} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, c string) {
		at, s, ok := parseCursor(c)
		if !ok {
			return
		}
		if !model.ValidSID(s) {
			t.Fatalf("%q: invalid sid %q accepted", c, s)
		}
		if back := strconv.FormatInt(at, 10) + "_" + s; back != c {
			if at2, s2, ok2 := parseCursor(back); !ok2 || at2 != at || s2 != s {
				t.Fatalf("round trip %q -> %q", c, back)
			}
		}
	})
}

func FuzzParseImportRows(f *testing.F) {
	for _, s := range []string{`{}`, `{"k":"dmFsdWU="}`, `{"key":"k","value_base64":"dmFsdWU="}` + "\n" + `{"key":"k2","value_base64":"eA=="}`,
		`[`, `{"k":1}`, "\x00", `{"key":"k","value_base64":"!!"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// no panic, and the same input gives the same rows (an empty key
		// is passed through: the import skips keys it cannot place)
		rows, err := parseImportRows(data)
		again, err2 := parseImportRows(data)
		if (err == nil) != (err2 == nil) || len(rows) != len(again) {
			t.Fatalf("%q: not deterministic", data)
		}
	})
}
