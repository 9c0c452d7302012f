package console_test

// Browser scenarios beyond attribution: live updates, takeover, replies
// with attachments, auth, warnings, dates, read-only sessions (spec §12
// C13-C20).

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/services/takeover"
	"github.com/langbot-nats/plugins/services/takeover/model"
)

func TestConsoleC13MessageAppearsLive(t *testing.T) {
	w := newWorld(t, cfgReply)
	b := w.b
	b.show(w.sid["A"])
	before := b.count(`[data-testid=message]`)
	w.h.say(w.bind, w.cfg, "person", "1001", "1001", "name-A", "arrived while watching")
	b.until("the new message on screen", `Array.from(document.querySelectorAll('[data-testid=message]')).some((m) => m.textContent.includes('arrived while watching'))`)
	if n := b.count(`[data-testid=message]`); n != before+1 {
		t.Fatalf("%d messages, want %d", n, before+1)
	}
	// a new session appears in the list too, with no reload
	w.h.say(w.bind, w.cfg, "group", "g-9", "u-1", "Gina", "new group here")
	b.until("the new group listed", `document.querySelector('`+item(sidOf("group", "g-9"))+`')`)
	if s := b.snap(); s.Settled["GET /info"] != 1 {
		t.Fatalf("the page reloaded: %v", s.Settled)
	}
}

func TestConsoleC14TakeoverBlocksAI(t *testing.T) {
	w := newWorld(t, cfgReply)
	b := w.b
	b.show(w.sid["A"])
	if r := w.h.say(w.bind, w.cfg, "person", "1001", "1001", "name-A", "before"); r.PreventDefault {
		t.Fatal("blocked before the takeover")
	}
	b.run(clickTakeover())
	b.until("takeover on with a countdown", `document.querySelector('[data-testid=takeover-btn]').dataset.state === 'on' && !document.querySelector('[data-testid=countdown]').hidden`)
	b.until("the countdown ticking", `/^(09|10):\d\d$/.test(document.getElementById('countdownText').textContent)`)
	if r := w.h.say(w.bind, w.cfg, "person", "1001", "1001", "name-A", "after"); !r.PreventDefault || !r.PreventPostorder {
		t.Fatalf("the AI is not blocked after the takeover: %+v", r)
	}
	var rec *model.Record
	kvGet(t, w.h, w.sc, w.sid["A"], &rec)
	if rec.Takeover.Operator != "alice" || rec.Takeover.Via != model.ViaConsole {
		t.Fatalf("takeover audit: %+v", rec.Takeover)
	}
	// release through the page
	b.run(clickTakeover())
	b.until("takeover off", `document.querySelector('[data-testid=takeover-btn]').dataset.state === 'off' && document.querySelector('[data-testid=countdown]').hidden`)
	kvGet(t, w.h, w.sc, w.sid["A"], &rec)
	if rec.Takeover.Active || rec.Takeover.ReleasedBy != "alice" {
		t.Fatalf("release audit: %+v", rec.Takeover)
	}
}

func TestConsoleC15ReplyWithImage(t *testing.T) {
	w := newWorld(t, cfgReply)
	b := w.b
	b.show(w.sid["B"])
	png := tinyPNG()
	b.upload(`#imageInput`, "shot.png", png)
	b.until("the image staged", `TakeoverConsole.snapshot().staged.image === 'shot.png'`)
	b.typeText("see the picture")
	b.pressEnter()
	m := w.h.host.WaitSends(t, 1, 15*time.Second)[0].SendMessage()
	if m.TargetID != "1002" || len(m.MessageChain) != 2 || m.MessageChain[1].Type != "Image" {
		t.Fatalf("send: %s %+v", m.TargetID, m.MessageChain)
	}
	_, data, _ := strings.Cut(m.MessageChain[1].Base64, ",")
	if raw, _ := base64.StdEncoding.DecodeString(data); string(raw) != string(png) {
		t.Fatal("the host got other image bytes")
	}
	b.until("the entry's image loaded through /blob", `document.querySelector('[data-testid=msg-image][data-loaded=true]')`)
	if s := b.snap(); s.Text != "" || s.Staged.Image != "" {
		t.Fatalf("the sent draft stayed: %+v", s)
	}
	var ok bool
	b.eval(`(() => { const i = document.querySelector('[data-testid=msg-image][data-loaded=true]'); return i.naturalWidth === 24 && i.src.startsWith('blob:'); })()`, &ok)
	if !ok {
		t.Fatal("the image is not shown from an object URL")
	}
}

func TestConsoleC16TokensGetNothing(t *testing.T) {
	w := newWorld(t, cfgReply)
	other, scOther := w.h.install("other", cfgReply)
	w.h.say(other, cfgReply, "person", "9009", "9009", "Outsider", "secret of B")
	for name, tok := range map[string]string{
		"forged":  forge([]byte(strings.Repeat("z", 32)), `{"scope":"`+w.sc.String()+`","operator":"alice","exp":`+strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)+`}`),
		"expired": w.h.token(w.sc, "alice", -time.Minute),
	} {
		b := newBrowser(t, w.h)
		b.open(tok)
		s := b.snap()
		if !s.Dead || b.attr(`#auth`, "hidden") != "<absent>" || b.attr(`#app`, "hidden") != "" {
			t.Fatalf("%s: no auth screen: %+v", name, s)
		}
		if n := b.count(`[data-testid=session-item]`); n != 0 || s.Settled["GET /sessions"] != 0 {
			t.Fatalf("%s: %d sessions shown, %d list loads", name, n, s.Settled["GET /sessions"])
		}
	}
	// A's token lists only A, and B's sid through it is 404
	b := w.b
	if n := b.count(`[data-testid=session-item]`); n != 4 {
		t.Fatalf("A lists %d sessions", n)
	}
	if b.count(item(sidOf("person", "9009"))) != 0 {
		t.Fatal("A's page lists B's session")
	}
	var status int
	b.eval(`fetch('api/messages?sid=`+sidOf("person", "9009")+`', {headers: {Authorization: 'Bearer ' + sessionStorage.getItem('takeover.console.token')}}).then((r) => r.status)`, &status)
	if status != 404 {
		t.Fatalf("B's sid through A's token: %d", status)
	}
	_ = scOther
}

func TestConsoleC17DeliveredNotSaved(t *testing.T) {
	w := newWorld(t, cfgReply)
	b := w.b
	b.show(w.sid["A"])
	hr := w.h.gate.Hold("POST", "/reply", w.sid["A"])
	b.typeText("delivered only")
	b.send()
	hr.Wait(t)
	hr.ReleaseWith(t, &fake{200, map[string]any{"delivered": true, "saved": false, "warning": "history_not_saved", "takeover": map[string]any{"active": true, "remaining": 600, "timeout": 600}}})
	b.until("the warning toast", `document.querySelector('[data-testid=toast][data-kind=warn]')`)
	if s := b.snap(); s.Text != "" {
		t.Fatalf("the sent draft stayed: %q", s.Text)
	}
}

func TestConsoleC18Dates(t *testing.T) {
	w := newWorld(t, cfgReply)
	b := w.b
	w.h.clock.Advance(-26 * time.Hour)
	w.h.say(w.bind, w.cfg, "person", "1005", "1005", "Yusuf", "yesterday's question")
	w.h.clock.Advance(26 * time.Hour)
	bustest.Eventually(t, "yesterday's entry stored", func() bool {
		var p takeover.MessagePage
		err := w.h.tryPage(w.bind, w.cfg, "GET", "/messages", map[string]any{"sid": sidOf("person", "1005")}, &p)
		return err == nil && len(p.Messages) == 1
	})
	w.h.say(w.bind, w.cfg, "person", "1005", "1005", "Yusuf", "today's question")
	sid := sidOf("person", "1005")
	b.until("the session listed", `document.querySelector('`+item(sid)+`')`)
	b.show(sid)
	var dated []string
	b.eval(`Array.from(document.querySelectorAll('[data-testid=msg-time]')).map((e) => e.dataset.dated + '|' + e.textContent)`, &dated)
	if len(dated) != 2 || !strings.HasPrefix(dated[0], "true|") || !strings.HasPrefix(dated[1], "false|") {
		t.Fatalf("times %q: want yesterday's with a date and today's without", dated)
	}
	if len(strings.TrimPrefix(dated[1], "false|")) != 5 {
		t.Fatalf("today's time %q is not HH:MM", dated[1])
	}
}

func TestConsoleC20HandledEverywhereAndLegacyReadOnly(t *testing.T) {
	w := newWorld(t, `{"takeover_timeout":600,"trigger_words":["human"],"auto_takeover_on_trigger":false}`)
	w.h.say(w.bind, w.cfg, "person", "1001", "1001", "name-A", "a human please")
	b1 := w.b
	b1.until("A unhandled", `document.querySelector('`+item(w.sid["A"])+`').dataset.unread === 'true'`)
	b2 := newBrowser(t, w.h)
	b2.open(w.h.token(w.sc, "bob", time.Hour))
	b2.until("A unhandled in the second browser", `document.querySelector('`+item(w.sid["A"])+`').dataset.unread === 'true'`)
	b1.show(w.sid["A"])
	b1.run(clickHandled())
	b2.until("the dot cleared in the second browser", `document.querySelector('`+item(w.sid["A"])+`').dataset.unread === 'false'`)

	// a legacy record (imported, no bot): composer and takeover disabled
	legacy := &model.Record{V: 1, Gen: "0123456789abcdef", SessionKey: "person_42", Type: "person", TargetID: "42", Name: "Old friend", Members: []model.Member{}, LastMsgAt: time.Now().UnixMilli()}
	sid := model.SID("person_42")
	kv, err := w.h.js.KeyValue(context.Background(), bus.Bucket(takeover.Plugin))
	if err != nil {
		t.Fatal(err)
	}
	key, _ := bus.Key(w.sc, "session", sid)
	v, _ := json.Marshal(legacy)
	if _, err := kv.Create(context.Background(), key, v); err != nil {
		t.Fatal(err)
	}
	b1.eval(`TakeoverConsole.resync().then(() => true)`, nil)
	b1.until("the legacy session listed", `document.querySelector('`+item(sid)+`')`)
	b1.show(sid)
	for _, sel := range []string{`[data-testid=takeover-btn]`, `[data-testid=send-btn]`, `[data-testid=msg-input]`} {
		if b1.attr(sel, "disabled") != "" {
			t.Fatalf("%s is enabled on a legacy session", sel)
		}
	}
}

func clickHandled() chromedpAction { return clickID("handledBtn") }
