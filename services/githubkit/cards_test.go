package githubkit_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/githubkit"
	"github.com/langbot-nats/plugins/services/githubkit/events"
	"github.com/langbot-nats/plugins/services/githubkit/fakegithub"
)

// Links of the fake's fixtures, one per kind.
const (
	repoLink    = "https://github.com/octocat/Hello-World"
	issueLink   = "https://github.com/octocat/Hello-World/issues/1347"
	prLink      = "https://github.com/octocat/Hello-World/pull/1290"
	releaseLink = "https://github.com/octocat/Hello-World/releases/tag/v1.1.0"
	commitLink  = "https://github.com/octocat/Hello-World/commit/6dcb09b5b57875f334f61aebed695e2e4193db5e"
)

// chatMsg is one message received in a chat.
type chatMsg struct {
	launcher string // group id
	sender   string
	text     string
	bot      string // "" = the installation's bot
}

// event sends a GroupMessageReceived for m as installation in and returns
// the event reply.
func (h *harness) event(in *inst, m chatMsg) wire.EventReply {
	h.t.Helper()
	if m.bot == "" {
		m.bot = in.session.BotUUID
	}
	data, _ := json.Marshal(map[string]any{
		"launcher_type": "group", "launcher_id": m.launcher, "sender_id": m.sender,
		"message_chain": []map[string]any{{"type": "Source", "id": 1, "time": 0}, {"type": "Plain", "text": m.text}},
	})
	id := h.newID()
	req := &wire.Request{Binding: in.b, Config: in.config(), Event: &wire.Event{Name: githubkit.EventGroupMessage, BotUUID: m.bot,
		Data: data, QueryUUID: wire.ID("q-" + id)}}
	ctx, cancel := context.WithTimeout(context.Background(), bustest.WaitTimeout)
	defer cancel()
	raw, err := h.invoker.Invoke(ctx, githubkit.Plugin, wire.EndpointEvent, id, req)
	if err != nil {
		h.t.Fatalf("event: %v", err)
	}
	var rep wire.EventReply
	if err := json.Unmarshal(raw, &rep); err != nil {
		h.t.Fatalf("event reply %s: %v", raw, err)
	}
	return rep
}

// cardOutcome is the count of card jobs with an outcome.
func (h *harness) cardOutcome(outcome string) float64 {
	return h.metric("githubkit_link_cards_total", map[string]string{"outcome": outcome})
}

// waitOutcome waits until outcome's count reaches n.
func (h *harness) waitOutcome(outcome string, n float64) {
	h.t.Helper()
	bustest.Eventually(h.t, "card outcome "+outcome, func() bool { return h.cardOutcome(outcome) >= n })
}

func cardInst(t *testing.T, h *harness, name, lang string) *inst {
	t.Helper()
	in := newInst(t, name, h.baseConfig(lang, "tok-"+name, 120))
	h.attach(in, true)
	return in
}

// TestLinkCardsOneMessagePerChatMessage: the links of one message (at most
// three) get one message with a card each, to the chat the message came
// from, in the installation's language; the event answers before GitHub
// does, with both flags false.
func TestLinkCardsOneMessagePerChatMessage(t *testing.T) {
	h := newHarness(t)
	h.start(githubkit.Config{}, nil)
	en := cardInst(t, h, "en", "en_US")
	zh := cardInst(t, h, "zh", "zh_Hans")

	// GitHub holds every answer back until the reply is checked: the event
	// reply must not wait for it
	hold := make(chan struct{})
	h.fake.Inject(fakegithub.Fault{Path: "/repos/", Hold: hold})
	rep := h.event(en, chatMsg{launcher: "g1", sender: "u1",
		text: "see " + repoLink + " and " + issueLink + ", also " + commitLink + " and " + releaseLink + " (one too many)"})
	if rep.PreventDefault || rep.PreventPostorder || len(rep.ReplyMessageChain) != 0 {
		t.Fatalf("event reply %+v, want both flags false", rep)
	}
	if n := len(h.sends()); n != 0 {
		t.Fatalf("%d sends before the event reply: the reply waited for GitHub", n)
	}
	close(hold)
	sends := h.host.WaitSends(t, 1, bustest.WaitTimeout)
	m := sends[0].SendMessage()
	if m.BotUUID != en.session.BotUUID || m.TargetType != "group" || m.TargetID != "g1" || len(m.MessageChain) != 1 {
		t.Fatalf("card sent to %+v", m)
	}
	if sends[0].Scope != en.sc || !strings.Contains(sends[0].IdempotencyKey, en.sc.String()) {
		t.Fatalf("card sent on scope %v with key %q", sends[0].Scope, sends[0].IdempotencyKey)
	}
	text := m.MessageChain[0].Text
	cards := strings.Split(text, "\n\n")
	if len(cards) != events.MaxCardsPerMessage {
		t.Fatalf("%d cards, want %d (one per link, at most 3):\n%s", len(cards), events.MaxCardsPerMessage, text)
	}
	for i, want := range []string{"📦 octocat/Hello-World", "📝 octocat/Hello-World#1347 [open] Found a bug", "🔨 octocat/Hello-World commit 6dcb09b"} {
		if !strings.HasPrefix(cards[i], want) {
			t.Errorf("card %d = %q, want it to start with %q", i, cards[i], want)
		}
	}
	if strings.Contains(text, "releases") {
		t.Errorf("the fourth link got a card:\n%s", text)
	}

	h.fake.ClearFaults()
	h.event(zh, chatMsg{launcher: "g1", sender: "u1", text: "合并了：" + prLink + "。"})
	sends = h.host.WaitSends(t, 2, bustest.WaitTimeout)
	zhText := sends[1].SendMessage().MessageChain[0].Text
	if !strings.HasPrefix(zhText, "🔀 octocat/Hello-World#1290 [已合并] Speed up the build\n拉取请求 · 作者") || sends[1].Scope != zh.sc {
		t.Fatalf("zh_Hans card on %v:\n%s", sends[1].Scope, zhText)
	}
	h.waitOutcome("sent", 2)
}

// TestLinkCardsSkip: no card for the bot's own message, for a gh command,
// for a message without a GitHub link, with the installation's setting
// off, or in a chat an admin turned cards off in; a non-admin cannot turn
// them off.
func TestLinkCardsSkip(t *testing.T) {
	h := newHarness(t)
	h.host.Respond(func(c bustest.HostCall) bustest.HostReply {
		if c.Action == wire.ActionGetBotInfo {
			return bustest.HostReply{Data: map[string]any{"bot": wire.BotInfo{UUID: "bot-a", Name: "Bot", Adapter: "test",
				AdapterRuntimeValues: map[string]any{"bot_account_id": 10001}}}}
		}
		return bustest.HostReply{}
	})
	h.start(githubkit.Config{}, nil)
	in := cardInst(t, h, "a", "en_US")

	t.Run("own message", func(t *testing.T) {
		h.event(in, chatMsg{launcher: "g1", sender: "10001", text: repoLink})
		h.waitOutcome("own_message", 1)
		h.event(in, chatMsg{launcher: "g1", sender: "20002", text: repoLink})
		h.waitOutcome("sent", 1)
		if s := h.sends(); len(s) != 1 || s[0].SendMessage().TargetID != "g1" {
			t.Fatalf("sends %+v, want one card, for the user's message", s)
		}
	})

	t.Run("command, no link, setting off", func(t *testing.T) {
		requests := len(h.fake.Requests())
		h.event(in, chatMsg{launcher: "g2", sender: "u1", text: "!gh repo " + repoLink})
		h.event(in, chatMsg{launcher: "g2", sender: "u1", text: "https://gitlab.com/o/r and github.com/features/actions"})
		off := newInst(t, "off", h.baseConfig("en_US", "tok", 120))
		off.cfg["link_cards"] = false
		h.attach(off, true)
		h.event(off, chatMsg{launcher: "g2", sender: "u1", text: repoLink})
		// none of these is queued: the handler decides before it answers
		for _, o := range []string{"queued", "dropped", "sent", "chat_off", "no_item"} {
			if v := h.cardOutcome(o); (o == "sent" && v != 1) || (o != "sent" && v != 0) {
				t.Fatalf("outcome %s = %v", o, v)
			}
		}
		if n := len(h.fake.Requests()); n != requests {
			t.Fatalf("%d GitHub requests for messages that get no card", n-requests)
		}
	})

	t.Run("chat turned off", func(t *testing.T) {
		sess := in.session
		sess.LauncherID = "g3"
		if got := h.cmd(in, "cards off", withSession(sess)); !strings.Contains(got, "Only bot admins") {
			t.Fatalf("non-admin cards off = %q", got)
		}
		if got := h.cmd(in, "cards off", withSession(sess), withPrivilege(2)); !strings.Contains(got, "Link cards are off in this chat") {
			t.Fatalf("admin cards off = %q", got)
		}
		if got := h.cmd(in, "cards", withSession(sess)); !strings.Contains(got, "are off") {
			t.Fatalf("cards = %q", got)
		}
		h.event(in, chatMsg{launcher: "g3", sender: "u1", text: issueLink})
		h.waitOutcome("chat_off", 1)
		// another chat of the same installation still gets its cards
		h.event(in, chatMsg{launcher: "g4", sender: "u1", text: issueLink})
		h.waitOutcome("sent", 2)
		if got := h.cmd(in, "cards on", withSession(sess), withPrivilege(2)); !strings.Contains(got, "Link cards are on") {
			t.Fatalf("admin cards on = %q", got)
		}
		h.event(in, chatMsg{launcher: "g3", sender: "u1", text: issueLink})
		h.waitOutcome("sent", 3)
		if got := h.cmd(in, "cards maybe", withSession(sess), withPrivilege(2)); !strings.HasPrefix(got, "Usage: !gh cards") {
			t.Fatalf("cards maybe = %q", got)
		}
	})
}

// TestLinkCardsRateLimit: a chat's burst holds, a repeated link gets no
// second card, another chat and another installation are not held back,
// and the chat gets cards again once its bucket refilled.
func TestLinkCardsRateLimit(t *testing.T) {
	h := newHarness(t)
	h.start(githubkit.Config{Cards: githubkit.CardLimits{Burst: 2, Every: time.Hour}}, nil)
	a := cardInst(t, h, "a", "en_US")
	b := cardInst(t, h, "b", "en_US")

	h.event(a, chatMsg{launcher: "g1", sender: "u1", text: repoLink + " " + issueLink + " " + commitLink})
	sends := h.host.WaitSends(t, 1, bustest.WaitTimeout)
	if n := len(strings.Split(sends[0].SendMessage().MessageChain[0].Text, "\n\n")); n != 2 {
		t.Fatalf("%d cards with a burst of 2", n)
	}
	h.event(a, chatMsg{launcher: "g1", sender: "u1", text: releaseLink})
	h.waitOutcome("limited", 1)
	h.event(a, chatMsg{launcher: "g1", sender: "u1", text: repoLink})
	h.waitOutcome("repeat", 1)

	// the same chat id in another installation, and another chat here
	h.event(b, chatMsg{launcher: "g1", sender: "u1", text: releaseLink})
	h.event(a, chatMsg{launcher: "g2", sender: "u1", text: releaseLink})
	sends = h.host.WaitSends(t, 3, bustest.WaitTimeout)
	got := map[string]bool{}
	for _, s := range sends[1:] {
		got[s.Scope.String()+"/"+s.SendMessage().TargetID] = true
	}
	if !got[b.sc.String()+"/g1"] || !got[a.sc.String()+"/g2"] {
		t.Fatalf("sends %v: another chat or installation was held back", got)
	}

	h.clock.Advance(time.Hour)
	h.event(a, chatMsg{launcher: "g1", sender: "u1", text: prLink})
	h.host.WaitSends(t, 4, bustest.WaitTimeout)
	if v := h.cardOutcome("limited"); v != 1 {
		t.Fatalf("limited = %v after the refill", v)
	}
}

// TestLinkCardsCache: within the TTL a link is answered from the cache
// (another chat, no second GitHub request); after it, the item is
// revalidated with its ETag, and a 304 still gives the card.
func TestLinkCardsCache(t *testing.T) {
	h := newHarness(t)
	h.start(githubkit.Config{Cards: githubkit.CardLimits{CacheTTL: time.Minute}}, nil)
	a := cardInst(t, h, "a", "en_US")
	b := cardInst(t, h, "b", "en_US")
	const path = "/repos/octocat/Hello-World/issues/1347"

	for i, chat := range []string{"g1", "g2"} {
		h.event(a, chatMsg{launcher: chat, sender: "u1", text: issueLink})
		h.host.WaitSends(t, i+1, bustest.WaitTimeout)
	}
	if r := h.requestsTo(path); len(r) != 1 || r[0].IfNoneMatch != "" {
		t.Fatalf("requests within the TTL: %+v, want one, unconditional", r)
	}
	// the cache is the installation's: b asks GitHub itself, with its token
	h.event(b, chatMsg{launcher: "g1", sender: "u1", text: issueLink})
	h.host.WaitSends(t, 3, bustest.WaitTimeout)
	if r := h.requestsTo(path); len(r) != 2 || r[1].Authorization != "Bearer tok-b" {
		t.Fatalf("requests after b's message: %+v", r)
	}

	h.clock.Advance(2 * time.Minute)
	h.event(a, chatMsg{launcher: "g3", sender: "u1", text: issueLink})
	sends := h.host.WaitSends(t, 4, bustest.WaitTimeout)
	r := h.requestsTo(path)
	if len(r) != 3 || r[2].IfNoneMatch == "" {
		t.Fatalf("requests after the TTL: %+v, want a third one with If-None-Match", r)
	}
	if got := sends[3].SendMessage().MessageChain[0].Text; !strings.Contains(got, "#1347 [open] Found a bug") {
		t.Fatalf("card after a 304:\n%s", got)
	}
	if v := h.metric("githubkit_card_lookups_total", map[string]string{"result": "revalidated"}); v != 1 {
		t.Fatalf("revalidated = %v", v)
	}
}
