package takeover

import (
	"strconv"
	"testing"

	"github.com/langbot-nats/plugins/services/takeover/model"
)

// Fuzz target of an unexported parser, the session list cursor (the import
// rows' is in package admin). Seeds are in testdata/fuzz/<target>.

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
