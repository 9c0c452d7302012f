package console

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/langbot-nats/plugins/services/takeover/model"
)

// FuzzReplyMembers checks the reply body's hand-written member scan
// against encoding/json: for any JSON object, the parameters it leaves
// decode to the object without its string image_base64 and file_base64
// members, and each non-empty one is decoded as model.DecodeDataURL
// decodes it (or refused when that refuses it).
func FuzzReplyMembers(f *testing.F) {
	for _, s := range []string{
		`{}`,
		`{"sid":"a","text":"hi","image_base64":"aGk="}`,
		`{ "image_base64" : "data:image/png;base64,aGk=" , "file_base64":"", "n":[1,{"x":"}"}] }`,
		`{"text":"a\"b\\","file_base64":"aG\u0069="}`,
		`{"image_base64":1,"image_base64":"aGk=","k":null,"b":true}`,
		`{"file_base64":"!!"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		body = bytes.TrimSpace(body)
		var want map[string]any
		if !json.Valid(body) || len(body) == 0 || body[0] != '{' || json.Unmarshal(body, &want) != nil {
			return
		}
		var raw map[string]json.RawMessage
		_ = json.Unmarshal(body, &raw)
		attach := map[string]string{}
		for _, k := range []string{"image_base64", "file_base64"} {
			if v, ok := raw[k]; ok && len(bytes.TrimSpace(v)) > 0 && bytes.TrimSpace(v)[0] == '"' {
				var s string
				_ = json.Unmarshal(v, &s)
				attach[k] = s
				delete(want, k)
			}
		}
		params, att, status, _ := replyMembers(body)
		for k, got := range map[string][]byte{"image_base64": att.image, "file_base64": att.file} {
			s, ok := attach[k]
			if !ok || s == "" {
				if got != nil {
					t.Fatalf("%s: decoded %d bytes from nothing", k, len(got))
				}
				continue
			}
			exp, err := model.DecodeDataURL(s, model.MaxAttachmentBytes)
			if err != nil {
				if status == 0 {
					t.Fatalf("%s %q: accepted, DecodeDataURL refuses it: %v", k, s, err)
				}
				return
			}
			if status == 0 && !bytes.Equal(got, exp) {
				t.Fatalf("%s: decoded %q, want %q", k, got, exp)
			}
		}
		if status != 0 {
			return // the other attachment was refused
		}
		var gotParams map[string]any
		if err := json.Unmarshal(params, &gotParams); err != nil {
			t.Fatalf("parameters %q are not a JSON object: %v", params, err)
		}
		if !reflect.DeepEqual(gotParams, want) {
			t.Fatalf("parameters %s, want %v", params, want)
		}
	})
}
