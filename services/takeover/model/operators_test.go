package model

import (
	"reflect"
	"strings"
	"testing"
)

func TestOperatorChatsParsing(t *testing.T) {
	many := make([]string, 0, MaxOperatorChats+5)
	for i := range MaxOperatorChats + 5 {
		many = append(many, `"b:person:`+strings.Repeat("9", i+1)+`"`)
	}
	for _, c := range []struct {
		name, raw string
		want      []OperatorChat
		clean     bool
	}{
		{"list", `{"operator_chats":["b1:group:123"," b2 : PERSON : 42 "]}`, []OperatorChat{{"b1", "group", "123"}, {"b2", "person", "42"}}, true},
		{"bare string is one entry", `{"operator_chats":"b1:group:123"}`, []OperatorChat{{"b1", "group", "123"}}, true},
		{"id keeps colons", `{"operator_chats":["b1:person:a:b"]}`, []OperatorChat{{"b1", "person", "a:b"}}, true},
		{"bad entries dropped", `{"operator_chats":["b1:room:1","b1:group:","b1",":group:1",7,{"a":1},"b1:group:x"]}`, []OperatorChat{{"b1", "group", "x"}}, false},
		{"duplicates dropped", `{"operator_chats":["b1:group:1","b1:group:1"]}`, []OperatorChat{{"b1", "group", "1"}}, true},
		{"null", `{"operator_chats":null}`, []OperatorChat{}, true},
		{"object", `{"operator_chats":{"x":1}}`, []OperatorChat{}, false},
		{"cap", `{"operator_chats":[` + strings.Join(many, ",") + `]}`, nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, problems := ParseSettings([]byte(c.raw), 0)
			if c.want == nil {
				if len(s.OperatorChats) != MaxOperatorChats {
					t.Fatalf("%d chats kept, want %d", len(s.OperatorChats), MaxOperatorChats)
				}
			} else if !reflect.DeepEqual(s.OperatorChats, c.want) {
				t.Fatalf("got %+v, want %+v", s.OperatorChats, c.want)
			}
			if got := len(problems) == 0; got != c.clean {
				t.Fatalf("problems %v, want clean=%v", problems, c.clean)
			}
		})
	}
	s, _ := ParseSettings([]byte(`{"operator_chats":["b1:group:1"]}`), 0)
	if !s.IsOperatorChat("b1", "group", "1") || s.IsOperatorChat("b1", "person", "1") || s.IsOperatorChat("b2", "group", "1") {
		t.Error("IsOperatorChat")
	}
	if s, p := ParseSettings([]byte(`{"language":"fr"}`), 0); s.Language != LanguageEnUS || len(p) != 1 {
		t.Errorf("bad language: %q %v", s.Language, p)
	}
	if s, _ := ParseSettings([]byte(`{"language":"zh_Hans"}`), 0); s.Language != LanguageZhHans {
		t.Error("zh_Hans not taken")
	}
}

func TestIsOperatorCommand(t *testing.T) {
	for text, want := range map[string]bool{
		"!ho resume": true, "！ho resume": true, " !ho": true, "!ho\tlist": true, "/ho resume": true, "#ho resume": true, "##ho": false,
		"!house": false, "ho resume": false, "!HO resume": false, "please !ho": false, "": false, "/house": false, "#house": false,
	} {
		if got := IsOperatorCommand(text, "#"); got != want {
			t.Errorf("%q: %v, want %v", text, got, want)
		}
	}
}
