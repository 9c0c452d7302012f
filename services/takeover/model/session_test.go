package model_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/services/takeover/model"
)

func TestSessionKeyCarriesBotIdentity(t *testing.T) {
	ka := model.SessionKey("bot-a", "person", "42")
	kb := model.SessionKey("bot-b", "person", "42")
	if ka != "bot-a:person_42" {
		t.Fatalf("key = %q", ka)
	}
	if ka == kb || model.SID(ka) == model.SID(kb) {
		t.Fatal("two bots share a key or sid")
	}
	sum := sha256.Sum256([]byte(ka))
	if got := model.SID(ka); got != hex.EncodeToString(sum[:]) || !model.ValidSID(got) {
		t.Fatalf("sid = %q", got)
	}
}

func TestBotUUIDAndLauncherValidation(t *testing.T) {
	for _, tt := range []struct {
		bot string
		ok  bool
	}{{"b1", true}, {"", false}, {"a:b", false}, {"a\nb", false}, {strings.Repeat("b", 128), true}, {strings.Repeat("b", 129), false}} {
		if got := model.ValidBotUUID(tt.bot); got != tt.ok {
			t.Errorf("ValidBotUUID(%q) = %v", tt.bot, got)
		}
	}
	for _, tt := range []struct {
		raw, id string
		ok      bool
	}{
		{`"42"`, "42", true}, {`42`, "42", true}, {`-7`, "-7", true}, {`1.5e3`, "1.5e3", true},
		{`""`, "", false}, {`null`, "", false}, {`true`, "", false}, {`{}`, "", false}, {`"a\u0001"`, "", false},
		{`"` + strings.Repeat("x", 257) + `"`, "", false}, {`"` + strings.Repeat("é", 256) + `"`, strings.Repeat("é", 256), true},
	} {
		id, ok := model.LauncherID(json.RawMessage(tt.raw))
		if id != tt.id || ok != tt.ok {
			t.Errorf("LauncherID(%s) = %q, %v", tt.raw, id, ok)
		}
	}
}

func TestLegacyAndIdentity(t *testing.T) {
	r := model.NewRecord("bot-a", "person", "42", "", 1)
	if model.IsLegacy(r) || r.Name != "42" {
		t.Fatalf("new record legacy=%v name=%q", model.IsLegacy(r), r.Name)
	}
	legacy := &model.Record{SessionKey: "person_42", Type: "person", TargetID: "42"}
	if !model.IsLegacy(legacy) {
		t.Fatal("unscoped key not legacy")
	}
	legacy.BotUUID = "bot-a"
	if !model.IsLegacy(legacy) {
		t.Fatal("key not rebuilt from identity is not legacy")
	}
	r.Adapter = "qq"
	for _, tt := range []struct {
		bot, adapter string
		conflict     bool
	}{{"bot-a", "qq", false}, {"bot-a", "", false}, {"bot-b", "qq", true}, {"bot-a", "tg", true}} {
		if got := model.IdentityConflict(r, tt.bot, tt.adapter); got != tt.conflict {
			t.Errorf("IdentityConflict(%s, %s) = %v", tt.bot, tt.adapter, got)
		}
	}
}

func TestMembersMostRecentFirstAndCapped(t *testing.T) {
	r := model.NewRecord("b", "group", "1", "g", 0)
	for i := range 600 {
		r.AddMember(string(rune('a'+i%26))+strings.Repeat("x", i/26), "", int64(i))
	}
	r.AddMember("a", strings.Repeat("n", 100), 1000)
	if len(r.Members) != 500 || r.Members[0].ID != "a" || len([]rune(r.Members[0].Name)) != 64 {
		t.Fatalf("members: %d, first %+v", len(r.Members), r.Members[0])
	}
	seen := map[string]bool{}
	for _, m := range r.Members {
		if seen[m.ID] {
			t.Fatalf("duplicate member %s", m.ID)
		}
		seen[m.ID] = true
	}
}
