package console_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover"
)

// ai records an AI answer as the host's NormalMessageResponded event.
func (h *harness) ai(b binding.Binding, config, ltype, lid, text string) {
	h.t.Helper()
	data, _ := json.Marshal(map[string]any{"launcher_type": ltype, "launcher_id": lid, "sender_id": lid, "response_text": text})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := h.inv.Invoke(ctx, takeover.Plugin, wire.EndpointEvent, bus.NewInvocationID(), &wire.Request{
		Binding: b, Config: json.RawMessage(config), Event: &wire.Event{Name: takeover.EventResponded, BotUUID: "bot-1", Data: data},
	}); err != nil {
		h.t.Fatalf("ai event: %v", err)
	}
}

// picture is a small landscape for the screenshots.
func picture() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 320, 180))
	for y := 0; y < 180; y++ {
		for x := 0; x < 320; x++ {
			c := color.RGBA{R: uint8(60 + y/2), G: uint8(130 + y/3), B: uint8(220 - y/3), A: 255}
			if y > 120+(x%80)/6 {
				c = color.RGBA{R: 46, G: uint8(120 + x%40), B: 70, A: 255}
			}
			if dx, dy := x-250, y-45; dx*dx+dy*dy < 400 {
				c = color.RGBA{R: 250, G: 204, B: 21, A: 255}
			}
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	_ = png.Encode(&b, img)
	return b.Bytes()
}

// TestConsoleC21Screenshots renders the list and a conversation in light
// and dark theme; with -screenshots it writes them to docs/images.
func TestConsoleC21Screenshots(t *testing.T) {
	h := newHarness(t)
	h.host.Respond(func(c bustest.HostCall) bustest.HostReply {
		if c.Action == wire.ActionGetBotInfo {
			return bustest.HostReply{Data: map[string]any{"bot": wire.BotInfo{UUID: "bot-1", Name: "Support Bot", Adapter: "telegram"}}}
		}
		return bustest.HostReply{}
	})
	config := `{"takeover_timeout":900,"trigger_words":["human","人工"],"user_notice_on_takeover":"Someone from our team will reply here shortly."}`
	bnd, sc := h.install("shots", config)
	h.groupNames = map[string]string{"g-7": "Weekend hikers"}
	h.say(bnd, config, "person", "4411", "4411", "Marco Rossi", "Thanks, the new password works.")
	h.ai(bnd, config, "person", "4411", "Glad to hear it! Anything else I can help with?")
	h.say(bnd, config, "group", "g-7", "u-ben", "Ben", "Is the Saturday route still open after the storm?")
	h.ai(bnd, config, "group", "g-7", "The northern trail reopened on Thursday; the ridge path is still closed.")
	h.say(bnd, config, "group", "g-7", "u-chloe", "Chloe", "Great, see you all at 8!")
	h.say(bnd, config, "person", "7788", "7788", "王小明", "你好，请帮我转人工")
	h.say(bnd, config, "person", "1001", "1001", "Alice Chen", "Hi, my order #5120 still has not arrived.")
	h.ai(bnd, config, "person", "1001", "Sorry about that! The tracking shows it left the warehouse nine days ago.")
	h.say(bnd, config, "person", "1001", "1001", "Alice Chen", "That is too long. Can I talk to a human, please?")
	alice := sidOf("person", "1001")
	tok := h.token(sc, "dana", time.Hour)
	// the operator answers with a picture of the parcel slip, over HTTP
	pic := "data:image/png;base64," + b64std(picture())
	if status, body := h.do(tok, "POST", "/reply", map[string]any{"sid": alice, "idempotency_key": "shot-reply-1",
		"text": "Hi Alice, I am Dana from support. Your parcel is waiting at the local depot; this slip lets you collect it today.", "image_base64": pic}); status != 200 {
		t.Fatalf("reply: %d %s", status, body)
	}
	h.say(bnd, config, "person", "1001", "1001", "Alice Chen", "Perfect, thank you so much!")
	// issue 31: an internal note on the chat and a canned reply
	if status, body := h.do(tok, "POST", "/notes", map[string]any{"sid": alice, "text": "VIP customer: second late parcel this month, offer the voucher."}); status != 200 {
		t.Fatalf("note: %d %s", status, body)
	}
	if status, body := h.do(tok, "POST", "/canned", map[string]any{"name": "depot", "text": "Your parcel is waiting at the local depot."}); status != 200 {
		t.Fatalf("canned: %d %s", status, body)
	}

	b := newBrowser(t, h)
	dir := t.TempDir()
	if *screenshots {
		dir = filepath.Join("..", "..", "..", "docs", "images")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	b.run(chromedp.EmulateViewport(1360, 820))
	shoot := func(name string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
		defer cancel()
		buf, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(buf))
		if err != nil || img.Bounds().Dx() < 1000 {
			t.Fatalf("%s: not a full-page PNG: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), buf, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b.open(tok) // the origin's localStorage is reachable from here on
	for _, theme := range []string{"light", "dark"} {
		b.eval(`(localStorage.setItem('takeover.console.theme', '`+theme+`'), localStorage.setItem('takeover.console.lang', 'en_US'), true)`, nil)
		b.open(tok)
		b.until("four sessions", `document.querySelectorAll('[data-testid=session-item]').length === 4`)
		var got string
		b.eval(`document.documentElement.dataset.theme`, &got)
		if got != theme {
			t.Fatalf("theme %q, want %q", got, theme)
		}
		if theme == "dark" { // the dark list shows the alert list open
			b.run(clickID("alertBtn"))
			b.until("the alert list", `!document.querySelector('[data-testid=alert-list]').hidden && document.querySelectorAll('#alertItems li').length === 2`)
		}
		shoot("console-list-" + theme + ".png")
		if theme == "dark" {
			b.run(clickID("alertBtn"))
		}
		b.show(alice)
		b.run(clickID("infoBtn"))
		b.until("the picture loaded", `document.querySelector('[data-testid=msg-image][data-loaded=true]')`)
		b.until("the countdown", `!document.querySelector('[data-testid=countdown]').hidden`)
		b.until("the note", `document.querySelectorAll('#noteList li:not(.muted)').length === 1`)
		shoot("console-chat-" + theme + ".png")
	}
	// the group in Chinese, dark
	b.eval(`(localStorage.setItem('takeover.console.lang', 'zh_Hans'), true)`, nil)
	b.open(tok)
	b.show(sidOf("group", "g-7"))
	b.run(clickID("infoBtn"))
	var lang string
	b.eval(`document.documentElement.lang`, &lang)
	if lang != "zh-Hans" {
		t.Fatalf("html lang %q", lang)
	}
	shoot("console-group-zh-dark.png")
}

func b64std(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
