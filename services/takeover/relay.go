package takeover

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/i18n"
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

// relayTarget is one operator chat relaying a chat, and the operator
// chat's binding key (so a stale pointer, whose operator chat has moved
// on, is ignored).
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

// relayTargets is a chat's reverse pointer (<scope>.relayto.<sid>): the
// operator chats relaying it, in the order they joined, at most
// model.MaxOperatorChats (one per operator chat).
type relayTargets struct {
	Targets []relayTarget `json:"targets"`
}

// decodeTargets reads a reverse pointer; the single target of an
// earlier version (one operator chat per chat) is read as a list of one.
func decodeTargets(b []byte) []relayTarget {
	var v struct {
		Targets []relayTarget `json:"targets"`
		relayTarget
	}
	if json.Unmarshal(b, &v) != nil {
		return nil
	}
	if len(v.Targets) == 0 && v.Key != "" {
		return []relayTarget{v.relayTarget}
	}
	return v.Targets
}

// liveTargets is the operator chats that relay sid now: listed in the
// reverse pointer, still operator chats of the installation, and whose
// own binding still names sid. stale is the listed ones that do not (a
// stale entry is skipped, not an error).
func liveTargets(ctx context.Context, kv *bus.KV, sc binding.Scope, set model.Settings, sid string) (live []relayTarget, stale map[string]bool, err error) {
	e, err := kv.Get(ctx, sc, store.KeyRelayTo, sid)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	stale = map[string]bool{}
	for _, t := range decodeTargets(e.Value()) {
		if !set.IsOperatorChat(t.Bot, t.Type, t.ID) {
			stale[t.Key] = true
			continue
		}
		cur, ok, err := readRelay(ctx, kv, sc, t.Key)
		if err != nil {
			return nil, nil, err
		}
		if !ok || cur.SID != sid {
			stale[t.Key] = true // the operator chat has moved on
			continue
		}
		live = append(live, t)
	}
	return live, stale, nil
}

// where names an operator chat as the "taken by" note does
// ("private chat 77").
func (t relayTarget) where(cat *i18n.Catalog, lang string) string {
	return cat.Text(lang, "note.where.chat", map[string]string{
		"kind": cat.Text(lang, "chat.type."+t.Type, nil), "id": settings.CutRunes(t.ID, 64)})
}

// RelayPlace is an operator chat relaying a chat, as the console shows it
// (in the words of `!ho show N`: "Relayed to: private chat 77").
type RelayPlace struct {
	Type string `json:"type"` // person, group
	ID   string `json:"id"`
}

// place is the operator chat as the console shows it.
func (t relayTarget) place() RelayPlace {
	return RelayPlace{Type: t.Type, ID: settings.CutRunes(t.ID, 64)}
}

// relayedTo is the operator chats relaying sid now (none on a read
// failure: the relay status is shown, never needed).
func (o *ops) relayedTo(ctx context.Context, sc binding.Scope, set model.Settings, sid string) []relayTarget {
	ts, _, err := liveTargets(ctx, o.st.Relays(), sc, set, sid)
	if err != nil {
		o.log.WarnContext(ctx, "the relay status was not read", "scope", sc.String(), "sid", sid, "err", err)
		return nil
	}
	return ts
}

// relayPlaces names operator chats for a text, comma separated.
func relayPlaces(cat *i18n.Catalog, lang string, ts []relayTarget) string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.where(cat, lang)
	}
	return strings.Join(names, cat.Text(lang, "relay.list_sep", nil))
}

// relaySub is the subcommand that relays a text from any operator chat
// (`!ho r <text>`): a group operator chat relays only through it.
const relaySub = "r"

// bindRelay makes the operator chat (key opKey) relay sid, replacing what
// it relayed before, and adds it to the chat's operator chats. It
// returns the other operator chats relaying sid (those to tell), and
// whether this operator chat relayed sid already (a repeated take tells
// nobody again).
func (o *ops) bindRelay(ctx context.Context, c pageCall, opKey, sid, n string) (others []relayTarget, again bool, err error) {
	rec, _, err := o.st.GetRecord(ctx, c.Scope, sid)
	if err != nil {
		return nil, false, err
	}
	name := ""
	if rec != nil {
		name = rec.Name
		if name == "" {
			name = rec.TargetID
		}
	}
	name = settings.CutRunes(name, 32)
	if old, ok, err := o.relayOf(ctx, c.Scope, opKey); err == nil && ok {
		if old.SID != sid {
			o.dropRelayTo(ctx, c.Scope, old.SID, opKey)
			defer o.publishRelay(ctx, c, old.SID) // after the binding moved
		}
		again = old.SID == sid
	}
	// the others before this chat joins; stale entries are dropped below
	live, stale, err := liveTargets(ctx, o.st.Relays(), c.Scope, c.Settings, sid)
	if err != nil {
		return nil, false, err
	}
	for _, t := range live {
		if t.Key != opKey {
			others = append(others, t)
		}
	}
	b, _ := json.Marshal(relayBinding{SID: sid, N: n, Chat: name, At: o.now.ms()})
	if _, _, err := o.st.Relays().Update(ctx, c.Scope, store.KeyRelay, func([]byte, bool) ([]byte, error) { return b, nil }, opKey); err != nil {
		return nil, false, err
	}
	oc := c.Origin.Chat
	me := relayTarget{Bot: oc.BotUUID, Type: oc.Type, ID: oc.ID, Key: opKey, N: n, Chat: name}
	_, _, err = o.st.Relays().Update(ctx, c.Scope, store.KeyRelayTo, func(cur []byte, exists bool) ([]byte, error) {
		var out relayTargets
		if exists {
			for _, t := range decodeTargets(cur) {
				// one entry per operator chat; the stale ones of the read
				// above go (a chat that joined since is kept)
				if t.Key != opKey && !stale[t.Key] && len(out.Targets) < model.MaxOperatorChats-1 {
					out.Targets = append(out.Targets, t)
				}
			}
		}
		out.Targets = append(out.Targets, me)
		return json.Marshal(out)
	}, sid)
	if err == nil {
		o.publishRelay(ctx, c, sid)
	}
	return others, again, err
}

// relayJoined tells each of others, the operator chats already relaying
// chat sid, that the operator chat of the command now relays it too
// (once per join: the key names the joining chat and its binding time).
func (o *ops) relayJoined(ctx context.Context, c pageCall, sid, opKey string, others []relayTarget) {
	me := relayTarget{Type: c.Origin.Chat.Type, ID: c.Origin.Chat.ID}
	at := strconv.FormatInt(o.now.ms(), 10)
	lang := c.Settings.Language
	who := o.catalog.Text(lang, "note.who.host", nil) // a sender id that is no valid operator id
	if c.Operator != "" && c.Operator != hostOperator {
		who = o.catalog.Text(lang, "relay.who", map[string]string{"id": c.Operator})
	}
	for _, t := range others {
		msg := text(o.catalog, c.Settings, "relay.joined", map[string]string{"n": t.N, "who": who, "where": me.where(o.catalog, lang)})
		to, key := t.chat(), "relay-join:"+sid+":"+opKey+":"+at+":"+t.Key
		o.notices.goBackground(ctx, func(ctx context.Context) { o.notices.sendOperator(ctx, c.Scope, c.Binding, to, msg, key) })
	}
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
func (o *ops) unbindRelay(ctx context.Context, c pageCall, opKey string) (relayBinding, bool, error) {
	sc := c.Scope
	b, ok, err := o.relayOf(ctx, sc, opKey)
	if err != nil || !ok {
		return b, ok, err
	}
	if err := o.st.Relays().Purge(ctx, sc, store.KeyRelay, opKey); err != nil {
		return b, ok, err
	}
	o.dropRelayTo(ctx, sc, b.SID, opKey)
	o.publishRelay(ctx, c, b.SID)
	return b, true, nil
}

// publishRelay publishes the operator chats relaying sid now on the live
// feed (the console's relay status).
func (o *ops) publishRelay(ctx context.Context, c pageCall, sid string) {
	places := []RelayPlace{}
	for _, t := range o.relayedTo(ctx, c.Scope, c.Settings, sid) {
		places = append(places, t.place())
	}
	o.notices.publishLive(c.Scope, model.Live{Type: model.LiveRelay, SID: sid, Data: relayLive{SID: sid, RelayedTo: places}})
}

// relayLive is the data of a live relay event.
type relayLive struct {
	SID       string       `json:"sid"`
	RelayedTo []RelayPlace `json:"relayed_to"`
}

// dropRelayTo removes the operator chat opKey from a chat's operator
// chats, and the reverse pointer once none is left.
func (o *ops) dropRelayTo(ctx context.Context, sc binding.Scope, sid, opKey string) {
	kv := o.st.Relays()
	rev, val, err := kv.Update(ctx, sc, store.KeyRelayTo, func(cur []byte, exists bool) ([]byte, error) {
		if !exists {
			return nil, bus.ErrNoChange
		}
		ts := decodeTargets(cur)
		var out relayTargets
		for _, t := range ts {
			if t.Key != opKey {
				out.Targets = append(out.Targets, t)
			}
		}
		if len(out.Targets) == len(ts) && len(ts) > 0 {
			return nil, bus.ErrNoChange
		}
		return json.Marshal(out)
	}, sid)
	if err != nil || rev == 0 || len(decodeTargets(val)) > 0 {
		return
	}
	// at the revision just written: a chat that joined since is kept
	_ = kv.Delete(ctx, sc, store.KeyRelayTo, rev, sid)
}

// relayCommand serves `!ho switch N` (bind, taking N over), `!ho leave`
// and `!ho r <text>` in an operator chat.
func (o *ops) relayCommand(ctx context.Context, c pageCall, inv *bus.Invocation, sub, numKey string, say func(string, map[string]string) (any, error)) (any, error) {
	cmd := inv.Command
	switch sub {
	case "leave":
		b, ok, err := o.unbindRelay(ctx, c, numKey)
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
			_, _, _ = o.unbindRelay(ctx, c, numKey)
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
		_, _, _ = o.unbindRelay(ctx, c, opKey)
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
// every operator chat relaying it, with a prefix naming the chat (by the
// operator chat's own number). It runs on the recording worker after the
// append, never on the decision's path; the sends go to the background
// with the notice retries, each under a key derived from the entry id and
// the operator chat, so a retried invocation forwards once.
func (n *notices) relayUser(ctx context.Context, sc binding.Scope, b binding.Binding, set model.Settings, sid string, e *model.Entry, parts []model.Part) {
	if e.Role != model.RoleUser || len(set.OperatorChats) == 0 {
		return
	}
	targets, _, err := liveTargets(ctx, n.st.Relays(), sc, set, sid)
	if err != nil || len(targets) == 0 {
		return
	}
	body, extra := "", ""
	var images []wire.Component
	for _, p := range parts {
		switch {
		case p.Type == model.PartText:
			body = p.Text
		case p.Type == model.PartImage && p.URL != "":
			images = append(images, wire.Component{Type: "Image", URL: p.URL})
		case p.Type == model.PartImage && p.Data != nil:
			images = append(images, wire.Component{Type: "Image", Base64: model.DataURL(p.Mime, p.Data)})
		}
		if p.Type == model.PartFile || p.Type == model.PartOther || p.Omitted != "" {
			extra += " " + n.catalog.Text(set.Language, "relay.attachment", nil)
		}
	}
	for _, t := range targets {
		prefix := n.catalog.Text(set.Language, "relay.prefix", map[string]string{"n": t.N, "chat": t.Chat})
		chain := append([]wire.Component{{Type: "Plain", Text: prefix + body + extra}}, images...)
		h := sha256.Sum256([]byte(t.Key))
		key := sendKey(sc, "relay", e.ID, hex.EncodeToString(h[:8]))
		to := t.chat()
		n.goBackground(ctx, func(ctx context.Context) {
			n.sendWithRetry(ctx, b, to, chain, key)
		})
	}
}

// relayReply shows a delivered operator reply to every operator chat
// relaying the chat but the one it came from, prefixed with the chat and
// who wrote it, so operators relaying one chat see each other's answers
// (and the console's) as the user does. Off the reply's path, in the
// background with the notice retries, once per reply (its idempotency
// key).
func (o *ops) relayReply(ctx context.Context, c pageCall, sid string, r *replyRequest) {
	if len(c.Settings.OperatorChats) == 0 {
		return
	}
	from := ""
	if c.Origin.Kind == originChat {
		from = c.Origin.Chat.Key()
	}
	lang := c.Settings.Language
	who := o.catalog.Text(lang, "note.who.host", nil)
	if c.Operator != "" && c.Operator != hostOperator {
		who = o.catalog.Text(lang, "relay.who", map[string]string{"id": c.Operator})
	}
	var images []wire.Component
	extra := ""
	switch {
	case r.ImageURL != "":
		images = append(images, wire.Component{Type: "Image", URL: r.ImageURL})
	case len(r.Image) > 0:
		images = append(images, wire.Component{Type: "Image", Base64: model.DataURL(r.ImageMime, r.Image)})
	}
	if len(r.File) > 0 {
		extra = " " + o.catalog.Text(lang, "relay.attachment", nil)
	}
	sum := sha256.Sum256([]byte(sid + ":" + r.IdempotencyKey))
	id := hex.EncodeToString(sum[:16])
	o.notices.goBackground(ctx, func(ctx context.Context) {
		targets, _, err := liveTargets(ctx, o.st.Relays(), c.Scope, c.Settings, sid)
		if err != nil {
			return
		}
		for _, t := range targets {
			if t.chat().Key() == from {
				continue
			}
			head := o.catalog.Text(lang, "relay.mirror", map[string]string{"n": t.N, "chat": t.Chat, "who": who})
			chain := append([]wire.Component{{Type: "Plain", Text: head + r.Text + extra}}, images...)
			h := sha256.Sum256([]byte(t.Key))
			o.notices.sendWithRetry(ctx, c.Binding, t.chat(), chain, sendKey(c.Scope, "relay-op", id, hex.EncodeToString(h[:8])))
		}
	})
}

// relayReleased ends the relay of a released chat (release, timeout, a
// user's cancel, an idle return) in every operator chat relaying it, and
// tells each. A failure here leaves a binding, which that operator chat's
// next message finds ended (relayOut).
func (n *notices) relayReleased(ctx context.Context, ses session) {
	kv := n.st.Relays()
	ent, err := kv.Get(ctx, ses.sc, store.KeyRelayTo, ses.sid)
	if err != nil {
		return
	}
	_ = kv.Delete(ctx, ses.sc, store.KeyRelayTo, ent.Revision(), ses.sid)
	n.publishLive(ses.sc, model.Live{Type: model.LiveRelay, SID: ses.sid, Data: relayLive{SID: ses.sid, RelayedTo: []RelayPlace{}}})
	for _, t := range decodeTargets(ent.Value()) {
		e, err := kv.Get(ctx, ses.sc, store.KeyRelay, t.Key)
		if err != nil {
			continue
		}
		var cur relayBinding
		if json.Unmarshal(e.Value(), &cur) != nil || cur.SID != ses.sid {
			continue // the operator chat has moved on
		}
		_ = kv.Delete(ctx, ses.sc, store.KeyRelay, e.Revision(), t.Key)
		msg := text(n.catalog, ses.set, "relay.released", map[string]string{"n": t.N})
		key := "relay-end:" + ses.sid + ":" + strconv.FormatInt(ses.rec.Takeover.ReleasedAt, 10) + ":" + t.Key
		to := t.chat()
		n.goBackground(ctx, func(ctx context.Context) { n.sendOperator(ctx, ses.sc, ses.b, to, msg, key) })
	}
}

// sendOperator sends one plain text to an operator chat (relay notes),
// once per key.
func (n *notices) sendOperator(ctx context.Context, sc binding.Scope, b binding.Binding, to model.OperatorChat, text, key string) {
	h := sha256.Sum256([]byte(key))
	n.sendWithRetry(ctx, b, to, wire.Plain(text), sendKey(sc, "note", hex.EncodeToString(h[:16])))
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
