package takeover_test

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover"
	"github.com/langbot-nats/plugins/services/takeover/model"
)

var testSID = model.SID("b1:person_42")

// pngBytes is a minimal PNG signature followed by padding.
var pngBytes = append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 32)...)

func TestParsePageRequest(t *testing.T) {
	png := "data:image/png;base64," + base64.StdEncoding.EncodeToString(pngBytes)
	txt := base64.StdEncoding.EncodeToString([]byte("plain text file"))
	big := base64.StdEncoding.EncodeToString(make([]byte, 10<<20+1))
	sid := `"sid":"` + testSID + `"`
	tests := []struct {
		name, method, endpoint, body string
		err                          error
		check                        func(r takeover.PageRequest) bool
	}{
		{"info", "get", "/info", ``, nil, func(r takeover.PageRequest) bool { return r.Op == takeover.OpInfo }},
		{"endpoint without slash", "GET", "info", `null`, nil, func(r takeover.PageRequest) bool { return r.Op == takeover.OpInfo }},
		{"unknown endpoint", "GET", "/nope", ``, wire.ErrNotFound, nil},
		{"wrong method", "PUT", "/takeover", ``, wire.ErrNotFound, nil},
		{"body not an object", "GET", "/sessions", `[1]`, wire.ErrBadRequest, nil},
		{"sessions defaults", "GET", "/sessions", `{}`, nil, func(r takeover.PageRequest) bool {
			return r.Type == "all" && r.Limit == 100 && r.Cursor == "" && r.Query == ""
		}},
		{"sessions params as text", "GET", "/sessions", `{"type":"group","q":"  Ann ","limit":"900","cursor":"abc_-="}`, nil, func(r takeover.PageRequest) bool {
			return r.Type == "group" && r.Limit == 500 && r.Query == "Ann" && r.Cursor == "abc_-="
		}},
		{"sessions limit low", "GET", "/sessions", `{"limit":0}`, nil, func(r takeover.PageRequest) bool { return r.Limit == 1 }},
		{"sessions bad type", "GET", "/sessions", `{"type":"bots"}`, wire.ErrBadRequest, nil},
		{"sessions bad limit", "GET", "/sessions", `{"limit":"many"}`, wire.ErrBadRequest, nil},
		{"sessions bad cursor", "GET", "/sessions", `{"cursor":"a b"}`, wire.ErrBadRequest, nil},
		{"messages", "GET", "/messages", `{` + sid + `,"before":"120","limit":500}`, nil, func(r takeover.PageRequest) bool {
			return r.SID == testSID && r.Before == 120 && r.Limit == 200
		}},
		{"messages default limit", "GET", "/messages", `{` + sid + `}`, nil, func(r takeover.PageRequest) bool { return r.Limit == 50 && r.Before == 0 }},
		{"messages bad before", "GET", "/messages", `{` + sid + `,"before":-1}`, wire.ErrBadRequest, nil},
		{"missing sid", "POST", "/takeover", `{}`, wire.ErrBadRequest, nil},
		{"uppercase sid", "POST", "/takeover", `{"sid":"` + strings.ToUpper(testSID) + `"}`, wire.ErrBadRequest, nil},
		{"sid of wrong type", "POST", "/takeover", `{"sid":{}}`, wire.ErrBadRequest, nil},
		{"takeover", "POST", "/takeover", `{` + sid + `}`, nil, func(r takeover.PageRequest) bool { return r.Op == takeover.OpTakeover && r.Op.IsAction() }},
		{"release", "DELETE", "/takeover", `{` + sid + `}`, nil, func(r takeover.PageRequest) bool { return r.Op == takeover.OpRelease }},
		{"status is a read", "GET", "/takeover_status", `{` + sid + `}`, nil, func(r takeover.PageRequest) bool { return !r.Op.IsAction() }},
		{"user info numeric member", "GET", "/user_info", `{` + sid + `,"member_id":42}`, nil, func(r takeover.PageRequest) bool { return r.MemberID == "42" }},
		{"blob", "GET", "/blob", `{` + sid + `,"name":"i.w.x.` + testSID + `.abc.1"}`, nil, func(r takeover.PageRequest) bool { return r.Name != "" }},
		{"blob bad name", "GET", "/blob", `{` + sid + `,"name":"a/b"}`, wire.ErrBadRequest, nil},
		{"export inline", "GET", "/export", `{` + sid + `,"inline_blobs":"true"}`, nil, func(r takeover.PageRequest) bool { return r.InlineBlobs }},
		{"clear without confirm", "DELETE", "/clear", `{}`, wire.ErrBadRequest, nil},
		{"clear confirm false", "DELETE", "/clear", `{"confirm":false}`, wire.ErrBadRequest, nil},
		{"clear", "DELETE", "/clear", `{"confirm":true}`, nil, func(r takeover.PageRequest) bool { return r.Op == takeover.OpClear }},
		{"delete session", "DELETE", "/session", `{` + sid + `}`, nil, func(r takeover.PageRequest) bool { return r.Op.IsAction() }},
		{"reply text", "POST", "/reply", `{` + sid + `,"idempotency_key":"key-0001","text":"  hello "}`, nil, func(r takeover.PageRequest) bool {
			return r.Reply.Text == "hello" && r.Reply.Image == nil && r.Reply.FileName == ""
		}},
		{"reply empty", "POST", "/reply", `{` + sid + `,"idempotency_key":"key-0001","text":"   "}`, wire.ErrBadRequest, nil},
		{"reply short key", "POST", "/reply", `{` + sid + `,"idempotency_key":"k1","text":"x"}`, wire.ErrBadRequest, nil},
		{"reply bad key chars", "POST", "/reply", `{` + sid + `,"idempotency_key":"key 0001!","text":"x"}`, wire.ErrBadRequest, nil},
		{"reply text too long", "POST", "/reply", `{` + sid + `,"idempotency_key":"key-0001","text":"` + strings.Repeat("x", 10001) + `"}`, wire.ErrTooLarge, nil},
		{"reply image and file", "POST", "/reply", `{` + sid + `,"idempotency_key":"key-0001","image_base64":"` + png + `","file_base64":"` + txt + `","file_name":"../a\u0007.txt"}`, nil, func(r takeover.PageRequest) bool {
			return r.Reply.ImageMime == "image/png" && string(r.Reply.File) == "plain text file" && r.Reply.FileName == "a.txt" && strings.HasPrefix(r.Reply.FileMime, "text/plain")
		}},
		{"reply default file name", "POST", "/reply", `{` + sid + `,"idempotency_key":"key-0001","file_base64":"` + txt + `"}`, nil, func(r takeover.PageRequest) bool { return r.Reply.FileName == "file" }},
		{"reply non-image image", "POST", "/reply", `{` + sid + `,"idempotency_key":"key-0001","image_base64":"` + txt + `"}`, wire.ErrBadRequest, nil},
		{"reply image too large", "POST", "/reply", `{` + sid + `,"idempotency_key":"key-0001","image_base64":"` + big + `"}`, wire.ErrTooLarge, nil},
		{"reply file not base64", "POST", "/reply", `{` + sid + `,"idempotency_key":"key-0001","file_base64":"@@@"}`, wire.ErrBadRequest, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := takeover.ParsePageRequest(tt.method, tt.endpoint, []byte(tt.body))
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				var re *wire.Error
				if !errors.As(err, &re) || re.Message == "" {
					t.Fatalf("err %v is not a bus.Error with a message", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if !tt.check(r) {
				t.Fatalf("request %+v", r)
			}
		})
	}
}

func TestOperatorOf(t *testing.T) {
	for in, want := range map[string]string{"alice": "alice", "a.b@c-d_e": "a.b@c-d_e", "": "host", "a b": "host", strings.Repeat("a", 65): "host"} {
		if got := takeover.OperatorOf(in); got != want {
			t.Errorf("OperatorOf(%q) = %q", in, got)
		}
	}
}

// FuzzParsePageRequest checks that parsing never panics, that every failure
// is a wire.Error of a known kind, and that a success respects the bounds
// of spec §7 and §11 for its operation.
func FuzzParsePageRequest(f *testing.F) {
	f.Add("GET", "/sessions", []byte(`{"type":"person","limit":"10","q":"x"}`))
	f.Add("GET", "/messages", []byte(`{"sid":"`+testSID+`","before":5}`))
	f.Add("POST", "/reply", []byte(`{"sid":"`+testSID+`","idempotency_key":"abcdefgh","text":"hi","file_base64":"YWJj","file_name":"../x"}`))
	f.Add("DELETE", "/clear", []byte(`{"confirm":"1"}`))
	f.Add("GET", "/blob", []byte(`{"sid":"`+testSID+`","name":"a.b"}`))
	f.Add("POST", "takeover", []byte(`null`))
	f.Fuzz(func(t *testing.T, method, endpoint string, body []byte) {
		r, err := takeover.ParsePageRequest(method, endpoint, body)
		if err != nil {
			var re *wire.Error
			if !errors.As(err, &re) {
				t.Fatalf("error %v is not a bus.Error", err)
			}
			switch {
			case errors.Is(re, wire.ErrBadRequest), errors.Is(re, wire.ErrNotFound), errors.Is(re, wire.ErrTooLarge):
			default:
				t.Fatalf("kind %v", re)
			}
			return
		}
		op, err := takeover.ParseOp(method, endpoint)
		if err != nil || op != r.Op {
			t.Fatalf("op %q vs %q (%v)", op, r.Op, err)
		}
		if r.SID != "" && !model.ValidSID(r.SID) {
			t.Fatalf("sid %q", r.SID)
		}
		if r.Limit < 0 || r.Limit > 500 {
			t.Fatalf("limit %d", r.Limit)
		}
		if r.Op == takeover.OpReply {
			rep := r.Reply
			if rep == nil || len([]rune(rep.Text)) > 10000 || len(rep.Image) > 10<<20 || len(rep.File) > 10<<20 {
				t.Fatal("reply out of bounds")
			}
			if rep.Text == "" && rep.Image == nil && rep.File == nil {
				t.Fatal("empty reply accepted")
			}
			if len(rep.Image) > 0 && !strings.HasPrefix(rep.ImageMime, "image/") {
				t.Fatal("non-image accepted")
			}
			if len(rep.File) > 0 && (rep.FileName == "" || strings.ContainsAny(rep.FileName, "/\\\x00") || len(rep.FileName) > 200) {
				t.Fatalf("file name %q", rep.FileName)
			}
			// Round trip: a validated reply validates again unchanged.
			again := *rep
			if err := again.Validate(); err != nil || again.Text != rep.Text || again.FileName != rep.FileName {
				t.Fatalf("revalidation: %v", err)
			}
		}
	})
}
