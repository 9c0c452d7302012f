package lbpkg

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestPyJSON checks writePyJSON against the output of Python 3.11's
// json.dumps({"a": ["日程", "x\"\\/\n\t<&>\x7f\x01😀é", None, True, 10], "b": {}}):
// ASCII escaping with lower-case hex, surrogate pairs, / < & > left as
// they are, DEL escaped, ", " and ": " separators.
func TestPyJSON(t *testing.T) {
	n := ymap{
		{"a", yseq{str("日程"), str("x\"\\/\n\t<&>\x7f\x01😀é"), yscalar{nil}, yscalar{true}, yscalar{json.Number("10")}}},
		{"b", ymap{}},
	}
	var b bytes.Buffer
	writePyJSON(&b, n)
	want := `{"a": ["\u65e5\u7a0b", "x\"\\/\n\t<&>\u007f\u0001\ud83d\ude00\u00e9", null, true, 10], "b": {}}`
	if b.String() != want {
		t.Errorf("got  %s\nwant %s", b.String(), want)
	}
}
