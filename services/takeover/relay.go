package takeover

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/settings"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover/model"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

// Relay mode: after `!ho take N` (or `!ho switch N`) an
// operator chat relays chat N. In a private operator chat the operator's
// plain messages go to the user as replies, and the user's messages come
// back to the operator chat with a prefix naming the chat; in a group
// operator chat only `!ho r <text>` goes to the user (operators there talk
// among themselves). It ends with `!ho leave`, another `!ho switch`, or the
// end of the takeover (release or timeout): a binding is honoured only
// while its chat is taken over, and the first message after that ends it.
//
// The state is two records beside the session records (Store.Relays, no
// TTL, so a relay lasts as long as its takeover, renewals included), both
// scoped: the operator chat's binding (<scope>.relay.<hash of the operator
// chat>) and the chat's reverse pointer (<scope>.relayto.<sid>), so the
// recording path finds the operator chat of a user's message with one
// read. The
// operator side lives in ops (it replies through the reply operation);
// the user side in notices (it sends to operator chats, as the alerts do).

// relayBinding is an operator chat's relayed chat.
type relayBinding struct {
	SID  string `json:"sid"`
	N    string `json:"n"`    // the short number the operator named it by
	Chat string `json:"chat"` // its name, capped, for the prefix
	At   int64  `json:"at"`
}

// relayTarget is a chat's operator chat, and the operator chat's binding
// key (so a stale pointer, whose operator chat has moved on, is ignored).
type relayTarget struct {
	Bot  string `json:"bot"`
	Type string `json:"type"`
	ID   string `json:"id"`
	Key  string `json:"key"`
	N    string `json:"n"`
	Chat string `json:"chat"`
}

func (t relayTarget) chat() model.OperatorChat {
	return model.OperatorChat{BotUUID: t.Bot, Type: t.Type, ID: t.ID}
}

// relaySub is the subcommand that relays a text from any operator chat
// (`!ho r <text>`): a group operator chat relays only through it.
const relaySub = "r"

// bindRelay makes the operator chat (key opKey) relay sid, replacing what
// it relayed before.
func (o *ops) bindRelay(ctx context.Context, c pageCall, opKey, sid, n string) error {
	rec, _, err := o.st.GetRecord(ctx, c.Scope, sid)
	if err != nil {
		return err
	}
	name := ""
	if rec != nil {
		name = rec.Name
		if name == "" {
			name = rec.TargetID
		}
	}
	name = settings.CutRunes(name, 32)
	if old, ok, err := o.relayOf(ctx, c.Scope, opKey); err == nil && ok && old.SID != sid {
		o.dropRelayTo(ctx, c.Scope, old.SID, opKey)
	}
	b, _ := json.Marshal(relayBinding{SID: sid, N: n, Chat: name, At: o.now.ms()})
	if _, _, err := o.st.Relays().Update(ctx, c.Scope, store.KeyRelay, func([]byte, bool) ([]byte, error) { return b, nil }, opKey); err != nil {
		return err
	}
	oc := c.Origin.Chat
	t, _ := json.Marshal(relayTarget{Bot: oc.BotUUID, Type: oc.Type, ID: oc.ID, Key: opKey, N: n, Chat: name})
	_, _, err = o.st.Relays().Update(ctx, c.Scope, store.KeyRelayTo, func([]byte, bool) ([]byte, error) { return t, nil }, sid)
	return err
}

// relayOf reads an operator chat's binding.
func (o *ops) relayOf(ctx context.Context, sc binding.Scope, opKey string) (relayBinding, bool, error) {
	return readRelay(ctx, o.st.Relays(), sc, opKey)
}

func readRelay(ctx context.Context, kv *bus.KV, sc binding.Scope, opKey string) (relayBinding, bool, error) {
	e, err := kv.Get(ctx, sc, store.KeyRelay, opKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return relayBinding{}, false, nil
	}
	if err != nil {
		return relayBinding{}, false, err
	}
	var b relayBinding
	if json.Unmarshal(e.Value(), &b) != nil || !model.ValidSID(b.SID) {
		return relayBinding{}, false, nil
	}
	return b, true, nil
}

// unbindRelay ends an operator chat's relay; it reports what it relayed.
func (o *ops) unbindRelay(ctx context.Context, sc binding.Scope, opKey string) (relayBinding, bool, error) {
	b, ok, err := o.relayOf(ctx, sc, opKey)
	if err != nil || !ok {
		return b, ok, err
	}
	if err := o.st.Relays().Purge(ctx, sc, store.KeyRelay, opKey); err != nil {
		return b, ok, err
	}
	o.dropRelayTo(ctx, sc, b.SID, opKey)
	return b, true, nil
}

// dropRelayTo removes a chat's reverse pointer if it still names the
// operator chat opKey (another operator chat may have switched to it).
func (o *ops) dropRelayTo(ctx context.Context, sc binding.Scope, sid, opKey string) {
	e, err := o.st.Relays().Get(ctx, sc, store.KeyRelayTo, sid)
	if err != nil {
		return
	}
	var t relayTarget
	if json.Unmarshal(e.Value(), &t) == nil && t.Key != opKey {
		return
	}
	_ = o.st.Relays().Delete(ctx, sc, store.KeyRelayTo, e.Revision(), sid)
}

// relayCommand serves `!ho switch N` (bind, taking N over), `!ho leave`
// and `!ho r <text>` in an operator chat.
func (o *ops) relayCommand(ctx context.Context, c pageCall, inv *bus.Invocation, sub, numKey string, say func(string, map[string]string) (any, error)) (any, error) {
	cmd := inv.Command
	switch sub {
	case "leave":
		b, ok, err := o.unbindRelay(ctx, c.Scope, numKey)
		if err != nil {
			return o.sayError(c.Settings, err)
		}
		if !ok {
			return say("relay.none", nil)
		}
		return say("relay.left", map[string]string{"n": b.N})
	case relaySub:
		text := restAfter(cmd.FullText, cmd.Params[0])
		if text == "" {
			return say("relay.usage.r", nil)
		}
		text, err := o.expandCanned(ctx, c.Scope, text) // `/name` sends a canned reply (canned.go)
		if err != nil {
			return o.sayError(c.Settings, err)
		}
		b, ok, err := o.relayOf(ctx, c.Scope, numKey)
		if err != nil {
			return o.sayError(c.Settings, err)
		}
		if !ok {
			return say("relay.none", nil)
		}
		if !o.relayLive(ctx, c.Scope, b.SID) {
			_, _, _ = o.unbindRelay(ctx, c.Scope, numKey)
			return say("relay.ended", map[string]string{"n": b.N})
		}
		if _, err := o.operate(ctx, c, PageRequest{Op: opReply, SID: b.SID, Reply: &replyRequest{IdempotencyKey: relayIdem(inv.ID, 0), Text: text}}); err != nil {
			return o.sayError(c.Settings, err)
		}
		return say("cmd.sent", map[string]string{"n": b.N})
	}
	return say("cmd.unknown", nil)
}

// relayLive reports whether a relayed chat is still taken over.
func (o *ops) relayLive(ctx context.Context, sc binding.Scope, sid string) bool {
	rec, _, err := o.st.GetRecord(ctx, sc, sid)
	return err == nil && rec != nil && rec.Takeover.TakenOver(o.now.ms())
}

// relayIdem is the reply idempotency key of part i of a relayed message:
// a retried invocation sends nothing twice.
func relayIdem(invID string, i int) string {
	sum := sha256.Sum256([]byte(invID))
	return "relay-" + hex.EncodeToString(sum[:16]) + "-" + strconv.Itoa(i)
}

// relayEvent answers a message event of a private operator chat that
// relays a chat: the AI is blocked (the operator talks to the user, not
// to the bot) and the message goes to the user off the event's path. It
// reports false for every other event, which then takes the ordinary
// path: commands (`!ho ...`), group operator chats (they relay only
// through `!ho r`), operator chats relaying nothing.
func (o *ops) relayEvent(ctx context.Context, inv *bus.Invocation, set model.Settings, data model.EventData, lid string) (wire.EventReply, bool) {
	ev := inv.Event
	if ev.Name != EventPersonMessage || data.LauncherType != model.LauncherPerson || !set.IsOperatorChat(ev.BotUUID, data.LauncherType, lid) {
		return wire.EventReply{}, false
	}
	chain := model.ParseChain(data.Chain())
	if model.IsOperatorCommand(chain.TriggerText(), set.CommandPrefix) {
		return wire.EventReply{}, false
	}
	ses := wire.Session{BotUUID: ev.BotUUID, LauncherType: data.LauncherType, LauncherID: wire.ID(lid)}
	opKey := numbersKey(ses)
	rctx, cancel := context.WithTimeout(ctx, directReadWait)
	b, ok, err := o.relayOf(rctx, inv.Scope, opKey)
	cancel()
	if err != nil || !ok {
		return wire.EventReply{}, false
	}
	senderID, _ := data.Sender()
	c := pageCall{Scope: inv.Scope, Binding: inv.Binding, Settings: set, Operator: OperatorOf(senderID),
		Inactive: inv.Authority.State != bus.StateActive,
		Origin:   origin{Kind: originChat, Chat: model.OperatorChat{BotUUID: ev.BotUUID, Type: data.LauncherType, ID: lid}}}
	content := chain.Extract()
	invID := inv.ID
	o.notices.goBackground(ctx, func(ctx context.Context) {
		o.relayOut(ctx, c, opKey, b, content, invID)
	})
	return wire.EventReply{PreventDefault: true, PreventPostorder: true}, true
}

// relayOut sends an operator's relayed message to the user as replies
// (the text with the first image, then one reply per further image),
// or tells the operator chat why it was not sent.
func (o *ops) relayOut(ctx context.Context, c pageCall, opKey string, b relayBinding, content model.Content, invID string) {
	tell := func(key string) {
		o.notices.sendOperator(ctx, c.Scope, c.Binding, c.Origin.Chat, text(o.catalog, c.Settings, key, map[string]string{"n": b.N}), "relay-note:"+invID)
	}
	if c.Inactive {
		return
	}
	if !o.relayLive(ctx, c.Scope, b.SID) {
		_, _, _ = o.unbindRelay(ctx, c.Scope, opKey)
		tell("relay.ended")
		return
	}
	var reqs []*replyRequest
	cur := &replyRequest{IdempotencyKey: relayIdem(invID, 0)}
	for _, p := range content.Parts {
		switch {
		case p.Type == model.PartText:
			// `/name` sends a canned reply (canned.go); an unknown name
			// sends nothing and says so
			t, err := o.expandCanned(ctx, c.Scope, p.Text)
			if err != nil {
				tell(cannedRefusal(err))
				return
			}
			cur.Text = t
		case p.Type == model.PartImage && p.Omitted == "" && (p.URL != "" || p.Data != nil):
			if cur.ImageURL != "" || cur.Image != nil {
				reqs = append(reqs, cur)
				cur = &replyRequest{IdempotencyKey: relayIdem(invID, len(reqs))}
			}
			cur.ImageURL, cur.Image, cur.ImageMime = p.URL, p.Data, p.Mime
		}
	}
	if cur.Text != "" || cur.ImageURL != "" || cur.Image != nil {
		reqs = append(reqs, cur)
	}
	if len(reqs) == 0 {
		tell("relay.unsupported")
		return
	}
	for _, r := range reqs {
		if _, err := o.operate(ctx, c, PageRequest{Op: opReply, SID: b.SID, Reply: r}); err != nil {
			o.log.WarnContext(ctx, "a relayed operator message was not sent", "scope", c.Scope.String(), "sid", b.SID, "err", err)
			tell("relay.not_sent")
			return
		}
	}
}

// relayUser forwards a user's recorded message of a taken-over chat to
// the operator chat relaying it, if any, with a prefix naming the chat.
// It runs on the recording worker after the append, never on the
// decision's path; the send itself goes to the background with the
// notice retries, under a key derived from the entry id, so a retried
// invocation forwards once.
func (n *notices) relayUser(ctx context.Context, sc binding.Scope, b binding.Binding, set model.Settings, sid string, e *model.Entry, parts []model.Part) {
	if e.Role != model.RoleUser || len(set.OperatorChats) == 0 {
		return
	}
	kv := n.st.Relays()
	ent, err := kv.Get(ctx, sc, store.KeyRelayTo, sid)
	if err != nil {
		return
	}
	var t relayTarget
	if json.Unmarshal(ent.Value(), &t) != nil || !set.IsOperatorChat(t.Bot, t.Type, t.ID) {
		return
	}
	if cur, ok, err := readRelay(ctx, kv, sc, t.Key); err != nil || !ok || cur.SID != sid {
		return // the operator chat has moved on
	}
	prefix := n.catalog.Text(set.Language, "relay.prefix", map[string]string{"n": t.N, "chat": t.Chat})
	var chain []wire.Component
	txt := prefix
	for _, p := range parts {
		if p.Type == model.PartText {
			txt = prefix + p.Text
		}
	}
	chain = append(chain, wire.Component{Type: "Plain", Text: txt})
	for _, p := range parts {
		switch {
		case p.Type == model.PartImage && p.URL != "":
			chain = append(chain, wire.Component{Type: "Image", URL: p.URL})
		case p.Type == model.PartImage && p.Data != nil:
			chain = append(chain, wire.Component{Type: "Image", Base64: model.DataURL(p.Mime, p.Data)})
		case p.Type == model.PartFile || p.Type == model.PartOther || p.Omitted != "":
			chain[0].Text += " " + n.catalog.Text(set.Language, "relay.attachment", nil)
		}
	}
	h := sha256.Sum256([]byte(t.Key))
	key := "takeover:" + sc.String() + ":relay:" + e.ID + ":" + hex.EncodeToString(h[:8])
	n.goBackground(ctx, func(ctx context.Context) {
		n.sendWithRetry(ctx, b, t.chat(), chain, key)
	})
}

// relayReleased ends the relay of a released chat (release, timeout, a
// user's cancel, an idle return) and tells its operator chat. A failure
// here leaves the binding, which the operator chat's next message finds
// ended (relayOut).
func (n *notices) relayReleased(ctx context.Context, ses session) {
	kv := n.st.Relays()
	ent, err := kv.Get(ctx, ses.sc, store.KeyRelayTo, ses.sid)
	if err != nil {
		return
	}
	var t relayTarget
	if json.Unmarshal(ent.Value(), &t) != nil {
		return
	}
	_ = kv.Delete(ctx, ses.sc, store.KeyRelayTo, ent.Revision(), ses.sid)
	cur, ok, err := readRelay(ctx, kv, ses.sc, t.Key)
	if err != nil || !ok || cur.SID != ses.sid {
		return // the operator chat has moved on
	}
	if e, err := kv.Get(ctx, ses.sc, store.KeyRelay, t.Key); err == nil {
		_ = kv.Delete(ctx, ses.sc, store.KeyRelay, e.Revision(), t.Key)
	}
	msg := text(n.catalog, ses.set, "relay.released", map[string]string{"n": t.N})
	key := "relay-end:" + ses.sid + ":" + strconv.FormatInt(ses.rec.Takeover.ReleasedAt, 10) + ":" + t.Key
	n.goBackground(ctx, func(ctx context.Context) { n.sendOperator(ctx, ses.sc, ses.b, t.chat(), msg, key) })
}

// sendOperator sends one plain text to an operator chat (relay notes),
// once per key.
func (n *notices) sendOperator(ctx context.Context, sc binding.Scope, b binding.Binding, to model.OperatorChat, text, key string) {
	h := sha256.Sum256([]byte(key))
	n.sendWithRetry(ctx, b, to, wire.Plain(text), "takeover:"+sc.String()+":note:"+hex.EncodeToString(h[:16]))
}

// sendWithRetry sends a chain to an operator chat with the notice retries
// (Config.NoticeRetry); the idempotency key makes a resend after an
// unknown outcome safe.
func (n *notices) sendWithRetry(ctx context.Context, b binding.Binding, to model.OperatorChat, chain []wire.Component, key string) {
	for try := 0; ; try++ {
		tctx, cancel := context.WithTimeout(ctx, n.hostTimeout)
		err := n.runner.Host().SendMessage(tctx, b, wire.SendMessage{BotUUID: to.BotUUID, TargetType: to.Type, TargetID: to.ID, MessageChain: chain}, key)
		cancel()
		if err == nil {
			return
		}
		if try >= len(n.noticeRetry) {
			n.metrics.noticeFailed.Inc()
			n.log.WarnContext(ctx, "a relayed message to an operator chat was dropped after its retries", "err", err)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(n.noticeRetry[try]):
		}
	}
}
