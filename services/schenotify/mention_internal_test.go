package schenotify

import (
	"strings"
	"testing"
)

func TestTakeMentions(t *testing.T) {
	tests := []struct {
		in, msg, ids string
		fails        bool
	}{
		{in: "@alice stand-up @bob now", msg: "stand-up now", ids: "alice,bob"},
		{in: "开会 @123", msg: "开会", ids: "123"},
		{in: "mail a@b.c please", msg: "mail a@b.c please", ids: ""},
		{in: "keep  inner\nspacing @x", msg: "keep  inner\nspacing", ids: "x"},
		{in: "@a @a text", msg: "text", ids: "a"},
		{in: "lone @ sign", msg: "lone @ sign", ids: ""},
		{in: "x @" + strings.Repeat("z", MaxMentionRunes+1), fails: true},
		{in: "x @1 @2 @3 @4 @5 @6 @7 @8 @9 @10 @11", fails: true},
		{in: "x @1 @2 @3 @4 @5 @6 @7 @8 @9 @10", msg: "x", ids: "1,2,3,4,5,6,7,8,9,10"},
	}
	for _, tt := range tests {
		msg, ids, f := takeMentions(tt.in)
		if (f != nil) != tt.fails {
			t.Errorf("%q: failure %v, want failure %v", tt.in, f, tt.fails)
			continue
		}
		if !tt.fails && (msg != tt.msg || strings.Join(ids, ",") != tt.ids) {
			t.Errorf("%q: %q %q, want %q %q", tt.in, msg, ids, tt.msg, tt.ids)
		}
	}
}

func TestDeliveryChain(t *testing.T) {
	rec := &Record{Session: session{TargetType: "group"}, CreatorSenderID: "c", Mentions: []string{"c", "m"}}
	on := Settings{MentionCreator: true}
	got := deliveryChain(on, rec, "hi")
	if len(got) != 3 || got[0].Target != "c" || got[1].Target != "m" || got[2].Text != " hi" {
		t.Fatalf("group chain %+v", got)
	}
	if got := deliveryChain(Settings{}, rec, "hi"); len(got) != 3 || got[0].Target != "c" || got[1].Target != "m" {
		// without mention_creator the creator is still named once, as a member
		t.Fatalf("chain without creator mention %+v", got)
	}
	rec.Mentions = nil
	if got := deliveryChain(Settings{}, rec, "hi"); len(got) != 1 || got[0].Text != "hi" {
		t.Fatalf("no mentions: %+v", got)
	}
	rec.Session.TargetType = "person"
	rec.Mentions = []string{"m"}
	if got := deliveryChain(on, rec, "hi"); len(got) != 1 || got[0].Type != "Plain" {
		t.Fatalf("person chain %+v", got)
	}
}
