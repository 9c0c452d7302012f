package admin

import "testing"

// FuzzParseImportRows: the rows of an import file, from any bytes. Seeds
// are in testdata/fuzz/FuzzParseImportRows.
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
