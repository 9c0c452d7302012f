package takeover

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover/model"
)

// Canned replies: an installation's named texts, one KV value
// at <scope>.canned.all (store.Canned), bounded to 100 replies of 2000
// characters. Operators send one as `!ho reply N /<name>` (and in relay
// mode as `/<name>`, through expandCanned) or pick it in the console.

// Refusal reasons of canned replies (error.<reason> in the catalogue).
const (
	reasonCannedNotFound = "canned_not_found"
	reasonCannedBadName  = "canned_bad_name"
	reasonCannedTooLong  = "canned_too_long"
	reasonCannedFull     = "canned_full"
	reasonCannedEmpty    = "canned_empty"
)

// CannedList is the result of the canned operations: the installation's
// replies, sorted by name.
type CannedList struct {
	Replies []model.CannedReply `json:"replies"`
}

// parseCannedRequest validates GET, POST and DELETE /canned: a name for
// POST and DELETE, a text for POST.
func parseCannedRequest(p params, req *PageRequest) error {
	if req.Op == opCannedList {
		return nil
	}
	name, _, err := p.str("name")
	if err != nil {
		return err
	}
	if req.Canned, err = cannedName(name); err != nil {
		return err
	}
	if req.Op == opCannedDel {
		return nil
	}
	text, _, err := p.str("text")
	if err != nil {
		return err
	}
	req.Text, err = cannedText(text)
	return err
}

// cannedName validates and normalises a canned reply's name.
func cannedName(s string) (string, error) {
	name, ok := model.CannedName(s)
	if !ok {
		return "", wire.WithReason(wire.ErrBadRequest, reasonCannedBadName, "a canned reply's name is 1 to 32 letters, digits, _ or -")
	}
	return name, nil
}

// cannedText validates a canned reply's text.
func cannedText(s string) (string, error) {
	return checkText(s, model.MaxCannedTextRunes, reasonCannedEmpty, reasonCannedTooLong, "a canned reply")
}

// checkText trims an operator's text (a canned reply, a note) and refuses
// invalid UTF-8, an empty text (emptyReason) and one over max runes
// (longReason); what names the kind in the refusal.
func checkText(s string, max int, emptyReason, longReason, what string) (string, error) {
	if !utf8.ValidString(s) {
		return "", wire.Errorf(wire.ErrBadRequest, "text is not valid UTF-8")
	}
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return "", wire.WithReason(wire.ErrBadRequest, emptyReason, what+" needs a text")
	case utf8.RuneCountInString(s) > max:
		return "", wire.WithReason(wire.ErrTooLarge, longReason, what+" is at most "+strconv.Itoa(max)+" characters")
	}
	return s, nil
}

// cannedOp runs GET, POST (add or replace) and DELETE /canned.
func (o *ops) cannedOp(ctx context.Context, c pageCall, req PageRequest) (CannedList, error) {
	var set model.CannedSet
	var err error
	switch req.Op {
	case opCannedList:
		set, err = o.st.Canned(ctx, c.Scope)
	case opCannedPut:
		set, err = o.putCanned(ctx, c, req.Canned, req.Text)
	case opCannedDel:
		set, err = o.st.UpdateCanned(ctx, c.Scope, func(cs *model.CannedSet) error {
			i := slices.IndexFunc(cs.Replies, func(r model.CannedReply) bool { return r.Name == req.Canned })
			if i < 0 {
				return wire.WithReason(wire.ErrNotFound, reasonCannedNotFound, "no canned reply has that name")
			}
			cs.Replies = slices.Delete(cs.Replies, i, i+1)
			return nil
		})
	}
	if err != nil {
		return CannedList{}, err
	}
	if set.Replies == nil {
		set.Replies = []model.CannedReply{}
	}
	return CannedList{Replies: set.Replies}, nil
}

// putCanned adds or replaces a canned reply; a new one past the limit is
// refused.
func (o *ops) putCanned(ctx context.Context, c pageCall, name, text string) (model.CannedSet, error) {
	now := o.now.ms()
	return o.st.UpdateCanned(ctx, c.Scope, func(cs *model.CannedSet) error {
		r := model.CannedReply{Name: name, Text: text, By: c.Operator, UpdatedAt: now}
		if i := slices.IndexFunc(cs.Replies, func(x model.CannedReply) bool { return x.Name == name }); i >= 0 {
			cs.Replies[i] = r
			return nil
		}
		if len(cs.Replies) >= model.MaxCannedReplies {
			return wire.WithReason(wire.ErrConflict, reasonCannedFull, "the installation has the most canned replies it may keep")
		}
		cs.Replies = append(cs.Replies, r)
		slices.SortFunc(cs.Replies, func(a, b model.CannedReply) int { return strings.Compare(a.Name, b.Name) })
		return nil
	})
}

// expandCanned turns an operator's text that is exactly "/<name>" into
// the installation's canned reply of that name; "//..." sends the text
// with one slash less, and any other text is returned as it is. A
// well-formed name with no canned reply is refused (canned_not_found),
// so a typo never reaches the user. Relay mode calls it on each plain
// operator message.
func (o *ops) expandCanned(ctx context.Context, sc binding.Scope, text string) (string, error) {
	t := strings.TrimSpace(text)
	if strings.HasPrefix(t, "//") {
		return t[1:], nil
	}
	if !strings.HasPrefix(t, "/") || strings.ContainsAny(t, " \t\r\n") {
		return text, nil
	}
	name, ok := model.CannedName(t)
	if !ok {
		return text, nil
	}
	set, err := o.st.Canned(ctx, sc)
	if err != nil {
		return "", err
	}
	r, ok := set.Find(name)
	if !ok {
		return "", wire.WithReason(wire.ErrNotFound, reasonCannedNotFound, "no canned reply has that name")
	}
	return r.Text, nil
}

// cannedRefusal is the catalogue key that tells an operator chat why
// expandCanned refused a relayed text: no such canned reply, or the
// message was not sent.
func cannedRefusal(err error) string {
	if be, ok := wire.AsError(err); ok && be.Reason == reasonCannedNotFound {
		return "error." + reasonCannedNotFound
	}
	return "relay.not_sent"
}

// cannedCommand serves `!ho canned list | add <name> <text> | del <name>`.
func (o *ops) cannedCommand(ctx context.Context, c pageCall, cmd *wire.Command, say func(string, map[string]string) (any, error)) (any, error) {
	sub := ""
	if len(cmd.Params) > 1 {
		sub = strings.ToLower(cmd.Params[1])
	}
	switch sub {
	case "list", "ls":
		set, err := o.st.Canned(ctx, c.Scope)
		if err != nil {
			return o.sayError(c.Settings, err)
		}
		if len(set.Replies) == 0 {
			return say("cmd.canned.empty", nil)
		}
		var b strings.Builder
		b.WriteString(text(o.catalog, c.Settings, "cmd.canned.head", nil))
		for _, r := range set.Replies {
			b.WriteString("\n")
			b.WriteString(o.catalog.Text(c.Settings.Language, "cmd.canned.item", map[string]string{"canned": "/" + r.Name, "text": capPreview(r.Text)}))
		}
		return wire.CommandReply{Returns: []wire.Return{{Text: b.String()}}}, nil
	case "add", "set":
		if len(cmd.Params) < 4 {
			return say("cmd.usage.canned", nil)
		}
		name, err := cannedName(cmd.Params[2])
		if err != nil {
			return o.sayError(c.Settings, err)
		}
		t, err := cannedText(restAfter(cmd.FullText, cmd.Params[0], cmd.Params[1], cmd.Params[2]))
		if err != nil {
			return o.sayError(c.Settings, err)
		}
		if _, err := o.operate(ctx, c, PageRequest{Op: opCannedPut, Canned: name, Text: t}); err != nil {
			return o.sayError(c.Settings, err)
		}
		return say("cmd.canned.added", map[string]string{"canned": "/" + name})
	case "del", "delete", "rm":
		if len(cmd.Params) < 3 {
			return say("cmd.usage.canned", nil)
		}
		name, err := cannedName(cmd.Params[2])
		if err != nil {
			return o.sayError(c.Settings, err)
		}
		if _, err := o.operate(ctx, c, PageRequest{Op: opCannedDel, Canned: name}); err != nil {
			return o.sayError(c.Settings, err)
		}
		return say("cmd.canned.deleted", map[string]string{"canned": "/" + name})
	}
	return say("cmd.usage.canned", nil)
}
