package takeover

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/plugin"
	"github.com/langbot-nats/plugins/pkg/settings"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover/model"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

// commandWord is the chat command of operators (`!ho`, with the bot's
// prefix: texts write it "{prefix}ho", i18n.PrefixArg): the original
// plugin declared no command, so no word of it is taken.
const commandWord = "ho"

// adminPrivilege is LangBot's privilege of an admin sender.
const adminPrivilege = 2

// maxNumbers bounds the short numbers an operator chat keeps.
const maxNumbers = 99

// numbers is an operator chat's short numbers (<scope>.numbers.<hash>):
// number n names Sids[n-1]; "" is a number whose chat left the list, kept
// so the other numbers do not shift.
type numbers struct {
	Sids []string `json:"sids"`
}

// command serves `!ho <sub> ...` (docs/protocol.md): list, take,
// reply and release from an operator chat; pause and resume by an admin
// in any chat. Every change goes through the console's operations (do)
// and its audit line, so a command writes what the console writes.
func (o *ops) command(ctx context.Context, inv *bus.Invocation) (any, error) {
	cmd := inv.Command
	set := o.settings.get(inv.Scope, inv.Binding, inv.Config)
	// the answer names commands with the prefix the user typed
	set.CommandPrefix = plugin.CommandPrefix(plugin.TypedPrefix(commandWord, cmd.Prefix, cmd.FullText), set.CommandPrefix)
	say := func(key string, args map[string]string) (any, error) {
		return wire.CommandReply{Returns: []wire.Return{{Text: text(o.catalog, set, key, args)}}}, nil
	}
	sub := ""
	if len(cmd.Params) > 0 {
		sub = strings.ToLower(cmd.Params[0])
	}
	ses := cmd.Session
	admin := cmd.Privilege >= adminPrivilege
	operatorChat := set.IsOperatorChat(ses.BotUUID, ses.LauncherType, string(ses.LauncherID))
	c := pageCall{Scope: inv.Scope, Binding: inv.Binding, Settings: set, Operator: OperatorOf(string(ses.SenderID)),
		Inactive: inv.Authority.State != bus.StateActive,
		Origin:   origin{Kind: originChat, Chat: model.OperatorChat{BotUUID: ses.BotUUID, Type: ses.LauncherType, ID: string(ses.LauncherID)}}}
	switch sub {
	case "", "help":
		return wire.CommandReply{Returns: []wire.Return{{Text: text(o.catalog, set, "cmd.help", nil) + "\n" + text(o.catalog, set, "cmd.help.relay", nil) +
			"\n" + text(o.catalog, set, "cmd.help.more", nil)}}}, nil
	case "pause", "resume":
		if !admin {
			return say("cmd.refused.admin", nil)
		}
		return o.pauseCommand(ctx, c, inv, sub == "pause", say)
	case "list", "take", "reply", "release", "switch", "leave", relaySub:
	case "canned", "note", "show", "suggest": // canned.go, notes.go, assist.go
	default:
		return say("cmd.unknown", nil)
	}
	if !admin && !operatorChat {
		return say("cmd.refused.operator", nil)
	}
	numKey := numbersKey(ses)
	if sub == "list" {
		return o.listCommand(ctx, c, numKey)
	}
	if sub == "leave" || sub == relaySub {
		if !operatorChat {
			return say("cmd.refused.operator", nil)
		}
		return o.relayCommand(ctx, c, inv, sub, numKey, say)
	}
	if sub == "canned" {
		return o.cannedCommand(ctx, c, cmd, say)
	}
	if len(cmd.Params) < 2 {
		return say("cmd.usage."+sub, nil)
	}
	sid, err := o.numbered(ctx, c, numKey, cmd.Params[1])
	if err != nil {
		return o.sayError(set, err)
	}
	if sid == "" {
		// only a well-formed number is repeated back, never arbitrary text
		if n, err := strconv.Atoi(strings.TrimPrefix(cmd.Params[1], "#")); err != nil || n < 1 || n > maxNumbers {
			return say("cmd.bad_number", nil)
		}
		return say("cmd.unknown_number", map[string]string{"n": cmd.Params[1]})
	}
	args := map[string]string{"n": cmd.Params[1]}
	switch sub {
	case "take", "switch":
		if len(cmd.Params) > 2 {
			d, ok := parseDuration(cmd.Params[2])
			if !ok {
				return say("cmd.bad_duration", nil)
			}
			c.Settings.TakeoverTimeout = d
		}
		v, err := o.operate(ctx, c, PageRequest{Op: opTakeover, SID: sid})
		if err != nil {
			return o.sayError(set, err)
		}
		args["remaining"] = remainingWait(set.Language, v.(TakeoverView).ExpiresAt, o.now.ms())
		if !operatorChat {
			return say("cmd.taken", args)
		}
		// the operator chat relays the chat it took (relay.go), beside any
		// other operator chat relaying it: each is told of the others
		others, again, err := o.bindRelay(ctx, c, numKey, sid, cmd.Params[1])
		if err != nil {
			return o.sayError(set, err)
		}
		relay := "relay.on"
		if ses.LauncherType == model.LauncherGroup {
			relay = "relay.on_group"
		}
		answer := text(o.catalog, set, "cmd.taken", args) + "\n" + text(o.catalog, set, relay, args)
		if len(others) > 0 {
			answer += "\n" + text(o.catalog, set, "relay.shared", map[string]string{"n": args["n"], "where": relayPlaces(o.catalog, set.Language, others)})
			if !again {
				o.relayJoined(ctx, c, sid, numKey, others)
			}
		}
		return wire.CommandReply{Returns: []wire.Return{{Text: answer}}}, nil
	case "release":
		if _, err := o.operate(ctx, c, PageRequest{Op: opRelease, SID: sid}); err != nil {
			return o.sayError(set, err)
		}
		return say("cmd.released", args)
	case "note":
		return o.noteCommand(ctx, c, inv, sid, args, say)
	case "show":
		return o.showCommand(ctx, c, sid, args)
	case "suggest":
		return o.suggestCommand(ctx, c, sid, args, say)
	}
	text := restAfter(cmd.FullText, cmd.Params[0], cmd.Params[1])
	if text == "" {
		return say("cmd.usage.reply", nil)
	}
	if text, err = o.expandCanned(ctx, c.Scope, text); err != nil {
		return o.sayError(set, err)
	}
	sum := sha256.Sum256([]byte(inv.ID))
	v, err := o.operate(ctx, c, PageRequest{Op: opReply, SID: sid, Reply: &replyRequest{IdempotencyKey: "cmd-" + hex.EncodeToString(sum[:16]), Text: text}})
	if err != nil {
		return o.sayError(set, err)
	}
	if r, ok := v.(ReplyResult); ok && !r.Saved {
		return say("cmd.sent_not_saved", args)
	}
	return say("cmd.sent", args)
}

// operate runs one console operation for a command or the page endpoint,
// with the console's audit line of an action.
func (o *ops) operate(ctx context.Context, c pageCall, req PageRequest) (any, error) {
	v, err := o.do(ctx, c, req)
	if req.Op.IsAction() {
		outcome := "ok"
		if err != nil {
			outcome = "error"
		}
		o.audit(ctx, c, req, outcome)
	}
	return v, err
}

// sayError answers a refused or failed operation in the chat's words,
// naming what failed (error.<reason>: the service's storage, LangBot): a
// 503 error reply would reach the user as the package's own "no answer
// from the service" text, which names the wrong component.
func (o *ops) sayError(set model.Settings, err error) (any, error) {
	var be *wire.Error
	if !errors.As(wireError(err), &be) {
		return nil, err
	}
	key := "error." + be.Word
	if be.Reason != "" && text(o.catalog, set, "error."+be.Reason, nil) != "error."+be.Reason {
		key = "error." + be.Reason
	}
	if errors.Is(err, bus.ErrNoHost) {
		key = "error.no_host"
	}
	return wire.CommandReply{Returns: []wire.Return{{Text: text(o.catalog, set, key, nil)}}}, nil
}

// pauseCommand takes over (pause) or releases (resume) the chat the
// command was sent in, creating its session record when the chat was
// never recorded.
func (o *ops) pauseCommand(ctx context.Context, c pageCall, inv *bus.Invocation, pause bool, say func(string, map[string]string) (any, error)) (any, error) {
	ses := inv.Command.Session
	lid := string(ses.LauncherID)
	if !model.ValidBotUUID(ses.BotUUID) || (ses.LauncherType != model.LauncherPerson && ses.LauncherType != model.LauncherGroup) || lid == "" {
		return nil, wire.Errorf(wire.ErrBadRequest, "the command's session names no chat")
	}
	sid := model.SID(model.SessionKey(ses.BotUUID, ses.LauncherType, lid))
	if !pause {
		if _, err := o.operate(ctx, c, PageRequest{Op: opRelease, SID: sid}); err != nil {
			return o.sayError(c.Settings, err)
		}
		return say("cmd.resumed", nil)
	}
	if len(inv.Command.Params) > 1 {
		d, ok := parseDuration(inv.Command.Params[1])
		if !ok {
			return say("cmd.bad_duration", nil)
		}
		c.Settings.TakeoverTimeout = d
	}
	if !c.Inactive {
		now := o.now.ms()
		rec, rev, err := o.st.UpdateRecord(ctx, c.Scope, sid, func(cur *model.Record) (*model.Record, error) {
			if cur != nil {
				return nil, store.ErrNoChange
			}
			return model.NewRecord(ses.BotUUID, ses.LauncherType, lid, lid, now), nil
		})
		if err != nil {
			return o.sayError(c.Settings, err)
		}
		o.view.ApplyRecord(c.Scope, sid, rec, rev)
	}
	v, err := o.operate(ctx, c, PageRequest{Op: opTakeover, SID: sid})
	if err != nil {
		return o.sayError(c.Settings, err)
	}
	return say("cmd.paused", map[string]string{"remaining": remainingWait(c.Settings.Language, v.(TakeoverView).ExpiresAt, o.now.ms())})
}

// listCommand lists the chats waiting for a human (unread) or taken over,
// with the operator chat's short numbers: a chat keeps its number while it
// stays listed, new chats take the next free ones.
func (o *ops) listCommand(ctx context.Context, c pageCall, numKey string) (any, error) {
	stored, err := o.st.ListRecords(ctx, c.Scope)
	if err != nil {
		return o.sayError(c.Settings, err)
	}
	now := o.now.ms()
	recs := map[string]*model.Record{}
	var fresh []string
	for _, l := range stored {
		if l.Rec == nil || model.IsLegacy(l.Rec) || (!l.Rec.Unread && !l.Rec.Takeover.TakenOver(now)) {
			continue
		}
		recs[l.SID] = l.Rec
		fresh = append(fresh, l.SID)
	}
	sort.Slice(fresh, func(i, j int) bool { return recs[fresh[i]].LastMsgAt > recs[fresh[j]].LastMsgAt })
	var nums numbers
	_, _, err = o.runner.Dedupe().Update(ctx, c.Scope, store.KeyNumbers, func(cur []byte, exists bool) ([]byte, error) {
		nums = numbers{}
		if exists {
			_ = json.Unmarshal(cur, &nums)
		}
		have := map[string]bool{}
		for i, sid := range nums.Sids {
			if recs[sid] == nil {
				nums.Sids[i] = ""
			} else {
				have[sid] = true
			}
		}
		for len(nums.Sids) > 0 && nums.Sids[len(nums.Sids)-1] == "" {
			nums.Sids = nums.Sids[:len(nums.Sids)-1]
		}
		for _, sid := range fresh {
			if have[sid] {
				continue
			}
			slot := -1
			for i, v := range nums.Sids {
				if v == "" {
					slot = i
					break
				}
			}
			switch {
			case slot >= 0:
				nums.Sids[slot] = sid
			case len(nums.Sids) < maxNumbers:
				nums.Sids = append(nums.Sids, sid)
			}
		}
		return json.Marshal(nums)
	}, numKey)
	if err != nil {
		return o.sayError(c.Settings, err)
	}
	lang := c.Settings.Language
	if len(recs) == 0 {
		return wire.CommandReply{Returns: []wire.Return{{Text: text(o.catalog, c.Settings, "cmd.list.empty", nil)}}}, nil
	}
	var b strings.Builder
	b.WriteString(text(o.catalog, c.Settings, "cmd.list.head", nil))
	for i, sid := range nums.Sids {
		r := recs[sid]
		if r == nil {
			continue
		}
		name := r.Name
		if name == "" {
			name = r.TargetID
		}
		b.WriteString("\n")
		b.WriteString(o.catalog.Text(lang, "cmd.list.item", map[string]string{
			"n": strconv.Itoa(i + 1), "chat": settings.CutRunes(name, 64), "kind": o.catalog.Text(lang, "chat.type."+r.Type, nil),
			"state":   o.listState(lang, r.Takeover, now),
			"preview": capPreview(r.LastPreview.Text),
		}))
	}
	return wire.CommandReply{Returns: []wire.Return{{Text: b.String()}}}, nil
}

// listState is a listed chat's state as `!ho list` shows it: waiting, or
// taken over with who holds it and for how long. A takeover started by
// the user's trigger word has no operator until one acts (it is not
// "taken over by , 9m left"); one from LangBot's page, which names
// no caller, is held by "an operator".
func (o *ops) listState(lang string, t model.TakeoverState, now int64) string {
	if !t.TakenOver(now) {
		return o.catalog.Text(lang, "cmd.list.waiting", nil)
	}
	remaining := remainingWait(lang, t.ExpiresAt, now)
	switch t.Operator {
	case "":
		return o.catalog.Text(lang, "cmd.list.taken_trigger", map[string]string{"remaining": remaining})
	case hostOperator:
		return o.catalog.Text(lang, "cmd.list.taken", map[string]string{"remaining": remaining, "operator": o.catalog.Text(lang, "note.who.host", nil)})
	}
	return o.catalog.Text(lang, "cmd.list.taken", map[string]string{"remaining": remaining, "operator": t.Operator})
}

// numbered resolves a short number of the operator chat's list to a sid
// ("" when the number names no listed chat).
func (o *ops) numbered(ctx context.Context, c pageCall, numKey, word string) (string, error) {
	n, err := strconv.Atoi(strings.TrimPrefix(word, "#"))
	if err != nil || n < 1 || n > maxNumbers {
		return "", nil
	}
	e, err := o.runner.Dedupe().Get(ctx, c.Scope, store.KeyNumbers, numKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var nums numbers
	if json.Unmarshal(e.Value(), &nums) != nil || n > len(nums.Sids) {
		return "", nil
	}
	return nums.Sids[n-1], nil
}

// numbersKey names an operator chat's numbers record: a hash of the chat,
// so no chat id appears in a key.
func numbersKey(ses wire.Session) string {
	h := sha256.Sum256([]byte(model.SessionKey(ses.BotUUID, ses.LauncherType, string(ses.LauncherID))))
	return hex.EncodeToString(h[:16])
}

// parseDuration reads a command's duration: a Go duration ("90s", "30m",
// "2h") or a bare number of minutes, clamped to takeover_timeout's bounds
// [30 s, 24 h]; it returns seconds.
func parseDuration(w string) (int, bool) {
	var d time.Duration
	if n, err := strconv.Atoi(w); err == nil {
		d = time.Duration(n) * time.Minute
	} else if d, err = time.ParseDuration(strings.ToLower(w)); err != nil {
		return 0, false
	}
	if d <= 0 {
		return 0, false
	}
	return int(min(max(d, model.MinTakeoverTimeout*time.Second), model.MaxTakeoverTimeout*time.Second) / time.Second), true
}

// remainingWait is a takeover's time left as an answer shows it: rounded
// up to the whole second, so `!ho take 1 45m` answers "45m", not the
// "44m" of 2699.98 s left a few milliseconds after the take.
func remainingWait(lang string, expiresAt, now int64) string {
	return formatWait(lang, (max(expiresAt-now, 0)+999)/1000*1000)
}

// restAfter is the text of full after the given words, in order, keeping
// the reply's own spacing and line breaks.
func restAfter(full string, words ...string) string {
	i := strings.Index(full, commandWord)
	if i < 0 {
		return ""
	}
	rest := full[i+len(commandWord):]
	for _, w := range words {
		j := strings.Index(rest, w)
		if j < 0 {
			return ""
		}
		rest = rest[j+len(w):]
	}
	return strings.TrimSpace(rest)
}
