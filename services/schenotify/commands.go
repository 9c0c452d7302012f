package schenotify

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/services/schenotify/when"
)

// Command names (spec 4).
const (
	CommandSche  = "sche"
	CommandDsche = "dsche"
)

// replies is the part that answers commands and tools: it plans, calls
// reminders, and renders the answer in the installation's language.
type replies struct {
	rem         *reminders
	rd          Renderer
	zone        *time.Location // the default zone
	now         func() time.Time
	log         *slog.Logger
	minEvery    time.Duration // the shortest @every
	maxAttempts int           // Config.Retry.MaxAttempts, for the list
}

func (rp *replies) text(set Settings, key string, args map[string]string) string {
	return rp.rd.text(set, key, args)
}

func (rp *replies) failText(ctx context.Context, inv *bus.Invocation, set Settings, err error) string {
	var f *when.Failure
	if !errors.As(err, &f) {
		f = rp.internalFailure(ctx, inv, err)
	}
	return rp.rd.failureText(set, f)
}

func (rp *replies) sche(ctx context.Context, inv *bus.Invocation, set Settings, c command) string {
	now := rp.now()
	switch c.Kind {
	case CmdHelp:
		return rp.text(set, "cmd.help", nil)
	case CmdAddUsage:
		return rp.text(set, "cmd.add_usage", nil)
	case CmdAdd:
		plan, f := when.PlanAdd(c.Add, when.ScheduleInput{Now: now, Zone: set.Zone, MinEvery: rp.minEvery})
		if f != nil {
			return rp.rd.failureText(set, f)
		}
		msg, mentions, f := takeMentions(plan.Message)
		if f != nil {
			return rp.rd.failureText(set, f)
		}
		if strings.TrimSpace(msg) == "" {
			return rp.text(set, "cmd.add_usage", nil)
		}
		// The prompt form is read on the text the reader left (ai.go).
		kind := kindText
		if prompt, ok := cutAIKeyword(msg); ok {
			if f := checkAIAdd(set, prompt); f != nil {
				return rp.rd.failureText(set, f)
			}
			msg, kind = prompt, kindAI
		}
		plan.Message = msg
		sess, sender, ok := sessionOf(inv.Command.Session).resolve()
		if !ok {
			return rp.text(set, "err.no_session", nil)
		}
		id, err := rp.rem.add(ctx, addRequest{scope: inv.Scope, invID: inv.ID, settings: set, session: sess, sender: sender, plan: plan, via: viaCommand, mentions: mentions, kind: kind})
		if err != nil {
			return rp.failText(ctx, inv, set, err)
		}
		if kind == kindAI {
			return rp.rd.scheduled(set, id, plan, now) + "\n" + rp.rd.aiNote(set)
		}
		return rp.rd.scheduled(set, id, plan, now)
	case cmdChangeUsage:
		if c.Verb == cmdEdit {
			return rp.text(set, "cmd.edit_usage", nil)
		}
		return rp.text(set, "cmd.id_usage", map[string]string{"verb": c.Verb})
	case cmdSnooze, cmdEdit, cmdPause, cmdResume:
		sess, sender, ok := sessionOf(inv.Command.Session).resolve()
		if !ok {
			return rp.text(set, "err.no_session", nil)
		}
		out, err := rp.change(ctx, inv, set, sess, sender, c, viaCommand)
		switch {
		case errors.Is(err, errNotFound):
			return rp.text(set, "cmd.delete_not_found", map[string]string{"id": c.ID})
		case err != nil:
			return rp.failText(ctx, inv, set, err)
		}
		return rp.rd.changed(set, out, now)
	case CmdList:
		sess, _, ok := sessionOf(inv.Command.Session).resolve()
		if !ok {
			return rp.text(set, "err.no_session", nil)
		}
		recs, err := rp.rem.sessionRecords(ctx, inv.Scope, sess)
		if err != nil {
			return rp.failText(ctx, inv, set, err)
		}
		return rp.rd.listBody(set, recs, c.Page, rp.maxAttempts, now)
	}
	return rp.text(set, "cmd.help", nil)
}

func (rp *replies) dsche(ctx context.Context, inv *bus.Invocation, set Settings, c command) string {
	switch c.Kind {
	case CmdDelUsage:
		return rp.text(set, "cmd.delete_usage", nil)
	case CmdDelInvalid:
		return rp.text(set, "cmd.delete_invalid", map[string]string{"token": preview(c.Token, 32)})
	}
	sess, _, ok := sessionOf(inv.Command.Session).resolve()
	if !ok {
		return rp.text(set, "err.no_session", nil)
	}
	switch c.Kind {
	case CmdDelAll:
		recs, err := rp.rem.sessionRecords(ctx, inv.Scope, sess)
		if err != nil {
			return rp.failText(ctx, inv, set, err)
		}
		n := 0
		for _, r := range recs {
			_, _, found, err := rp.rem.remove(ctx, inv.Scope, sess, r.ID)
			if err != nil {
				return rp.failText(ctx, inv, set, err)
			}
			if found {
				n++
			}
		}
		return rp.text(set, "cmd.deleted_all", map[string]string{"count": strconv.Itoa(n)})
	case CmdDelIndex:
		recs, err := rp.rem.sessionRecords(ctx, inv.Scope, sess)
		if err != nil {
			return rp.failText(ctx, inv, set, err)
		}
		rangeText := rp.text(set, "cmd.delete_range", map[string]string{"index": strconv.Itoa(c.Index), "count": strconv.Itoa(len(recs))})
		if c.Index < 1 || c.Index > len(recs) {
			return rangeText
		}
		rec, inFlight, found, err := rp.rem.remove(ctx, inv.Scope, sess, recs[c.Index-1].ID)
		if err != nil {
			return rp.failText(ctx, inv, set, err)
		}
		if !found {
			return rangeText
		}
		return rp.rd.Deleted(set, rec, inFlight)
	case CmdDelID:
		rec, inFlight, found, err := rp.rem.remove(ctx, inv.Scope, sess, c.ID)
		if err != nil {
			return rp.failText(ctx, inv, set, err)
		}
		if !found {
			return rp.text(set, "cmd.delete_not_found", map[string]string{"id": c.ID})
		}
		return rp.rd.Deleted(set, rec, inFlight)
	}
	return rp.text(set, "cmd.delete_usage", nil)
}

// change runs a snooze, edit, pause or resume of the command or tool c.
func (rp *replies) change(ctx context.Context, inv *bus.Invocation, set Settings, sess session, sender string, c command, via string) (changeOutcome, error) {
	sc := inv.Scope
	switch c.Kind {
	case cmdSnooze:
		id, expr := c.ID, c.Rest
		if id == "" {
			// "!sche snooze <id> [<when>]": an id-shaped first word is an id
			// only if this chat has that reminder ("sunday 9am" is a time).
			w, after := cutWord(expr)
			if cand, ok := NormalizeID(foldWidth(w)); ok {
				if r, _, err := rp.rem.loadRecord(ctx, sc, cand); err == nil && r != nil && r.Session == sess {
					id, expr = cand, strings.TrimSpace(after)
				}
			}
		}
		return rp.rem.snooze(ctx, snoozeRequest{scope: sc, invID: inv.ID, settings: set, session: sess, sender: sender, id: id, expr: expr, via: via})
	case cmdEdit:
		if c.Rest == "" {
			return rp.rem.editText(ctx, sc, sess, c.ID, c.Text)
		}
		rec, _, err := rp.rem.loadRecord(ctx, sc, c.ID)
		if err != nil {
			return changeOutcome{}, err
		}
		if rec == nil || rec.Session != sess {
			return changeOutcome{}, errNotFound
		}
		p, f := when.PlanWhen(c.Rest, rec.Message, true, when.ScheduleInput{Now: rp.now(), Zone: set.Zone, MinEvery: rp.minEvery})
		if f != nil {
			return changeOutcome{}, f
		}
		return rp.rem.editTime(ctx, sc, sess, c.ID, p)
	case cmdPause:
		return rp.rem.pause(ctx, sc, sess, c.ID)
	case cmdResume:
		return rp.rem.resumeHeld(ctx, sc, sess, c.ID)
	}
	return changeOutcome{}, fail("internal", "", nil)
}
