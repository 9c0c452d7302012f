package schenotify

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/plugin"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/schenotify/when"
)

// Command names (spec 4).
const (
	CommandSche  = "sche"
	CommandDsche = "dsche"
)

func (s *Service) handleCommand(ctx context.Context, inv *bus.Invocation) (any, error) {
	set := NormalizeConfig(inv.Config, s.zone)
	// the answer names commands with the prefix the user typed
	set.CommandPrefix = plugin.CommandPrefix(plugin.TypedPrefix(inv.Command.Name, inv.Command.Prefix, inv.Command.FullText), set.CommandPrefix)
	in := CommandIn{Name: inv.Command.Name, Params: inv.Command.Params, FullText: inv.Command.FullText, Prefix: inv.Command.Prefix}
	var body string
	switch inv.Command.Name {
	case CommandSche:
		body = s.sche(ctx, inv, set, ParseSche(in))
	case CommandDsche:
		body = s.dsche(ctx, inv, set, ParseDsche(in))
	default:
		return nil, wire.Errorf(wire.ErrNotFound, "schenotify has no such command")
	}
	return wire.CommandReply{Returns: []wire.Return{{Text: s.rd.Reply(set, body)}}}, nil
}

func (s *Service) text(set Settings, key string, args map[string]string) string {
	return s.rd.text(set, key, args)
}

func (s *Service) failText(ctx context.Context, inv *bus.Invocation, set Settings, err error) string {
	var f *when.Failure
	if !errors.As(err, &f) {
		f = s.internalFailure(ctx, inv, err)
	}
	return s.rd.FailureText(set, f)
}

func (s *Service) sche(ctx context.Context, inv *bus.Invocation, set Settings, c Command) string {
	now := s.now()
	switch c.Kind {
	case CmdHelp:
		return s.text(set, "cmd.help", nil)
	case CmdAddUsage:
		return s.text(set, "cmd.add_usage", nil)
	case CmdAdd:
		plan, f := when.PlanAdd(c.Add, when.ScheduleInput{Now: now, Zone: set.Zone, MinEvery: s.cfg.MinEvery})
		if f != nil {
			return s.rd.FailureText(set, f)
		}
		msg, mentions, f := takeMentions(plan.Message)
		if f != nil {
			return s.rd.FailureText(set, f)
		}
		if strings.TrimSpace(msg) == "" {
			return s.text(set, "cmd.add_usage", nil)
		}
		plan.Message = msg
		sess, sender, ok := sessionOf(inv.Command.Session).Resolve()
		if !ok {
			return s.text(set, "err.no_session", nil)
		}
		id, err := s.add(ctx, addRequest{scope: inv.Scope, invID: inv.ID, settings: set, session: sess, sender: sender, plan: plan, via: ViaCommand, mentions: mentions})
		if err != nil {
			return s.failText(ctx, inv, set, err)
		}
		return s.rd.Scheduled(set, id, plan, now)
	case CmdChangeUsage:
		if c.Verb == CmdEdit {
			return s.text(set, "cmd.edit_usage", nil)
		}
		return s.text(set, "cmd.id_usage", map[string]string{"verb": c.Verb})
	case CmdSnooze, CmdEdit, CmdPause, CmdResume:
		sess, sender, ok := sessionOf(inv.Command.Session).Resolve()
		if !ok {
			return s.text(set, "err.no_session", nil)
		}
		out, err := s.change(ctx, inv, set, sess, sender, c, ViaCommand)
		switch {
		case errors.Is(err, errNotFound):
			return s.text(set, "cmd.delete_not_found", map[string]string{"id": c.ID})
		case err != nil:
			return s.failText(ctx, inv, set, err)
		}
		return s.rd.Changed(set, out, now)
	case CmdList:
		sess, _, ok := sessionOf(inv.Command.Session).Resolve()
		if !ok {
			return s.text(set, "err.no_session", nil)
		}
		recs, err := s.sessionRecords(ctx, inv.Scope, sess)
		if err != nil {
			return s.failText(ctx, inv, set, err)
		}
		return s.rd.ListBody(set, recs, c.Page, s.cfg.Retry.MaxAttempts, now)
	}
	return s.text(set, "cmd.help", nil)
}

func (s *Service) dsche(ctx context.Context, inv *bus.Invocation, set Settings, c Command) string {
	switch c.Kind {
	case CmdDelUsage:
		return s.text(set, "cmd.delete_usage", nil)
	case CmdDelInvalid:
		return s.text(set, "cmd.delete_invalid", map[string]string{"token": Preview(c.Token, 32)})
	}
	sess, _, ok := sessionOf(inv.Command.Session).Resolve()
	if !ok {
		return s.text(set, "err.no_session", nil)
	}
	switch c.Kind {
	case CmdDelAll:
		recs, err := s.sessionRecords(ctx, inv.Scope, sess)
		if err != nil {
			return s.failText(ctx, inv, set, err)
		}
		n := 0
		for _, r := range recs {
			_, _, found, err := s.remove(ctx, inv.Scope, sess, r.ID)
			if err != nil {
				return s.failText(ctx, inv, set, err)
			}
			if found {
				n++
			}
		}
		return s.text(set, "cmd.deleted_all", map[string]string{"count": strconv.Itoa(n)})
	case CmdDelIndex:
		recs, err := s.sessionRecords(ctx, inv.Scope, sess)
		if err != nil {
			return s.failText(ctx, inv, set, err)
		}
		rangeText := s.text(set, "cmd.delete_range", map[string]string{"index": strconv.Itoa(c.Index), "count": strconv.Itoa(len(recs))})
		if c.Index < 1 || c.Index > len(recs) {
			return rangeText
		}
		rec, inFlight, found, err := s.remove(ctx, inv.Scope, sess, recs[c.Index-1].ID)
		if err != nil {
			return s.failText(ctx, inv, set, err)
		}
		if !found {
			return rangeText
		}
		return s.rd.Deleted(set, rec, inFlight)
	case CmdDelID:
		rec, inFlight, found, err := s.remove(ctx, inv.Scope, sess, c.ID)
		if err != nil {
			return s.failText(ctx, inv, set, err)
		}
		if !found {
			return s.text(set, "cmd.delete_not_found", map[string]string{"id": c.ID})
		}
		return s.rd.Deleted(set, rec, inFlight)
	}
	return s.text(set, "cmd.delete_usage", nil)
}

// change runs a snooze, edit, pause or resume of the command or tool c.
func (s *Service) change(ctx context.Context, inv *bus.Invocation, set Settings, sess Session, sender string, c Command, via string) (changeOutcome, error) {
	sc := inv.Scope
	switch c.Kind {
	case CmdSnooze:
		id, expr := c.ID, c.Rest
		if id == "" {
			// "!sche snooze <id> [<when>]": an id-shaped first word is an id
			// only if this chat has that reminder ("sunday 9am" is a time).
			w, after := cutWord(expr)
			if cand, ok := NormalizeID(FoldWidth(w)); ok {
				if r, _, err := s.loadRecord(ctx, sc, cand); err == nil && r != nil && r.Session == sess {
					id, expr = cand, strings.TrimSpace(after)
				}
			}
		}
		return s.snooze(ctx, snoozeRequest{scope: sc, invID: inv.ID, settings: set, session: sess, sender: sender, id: id, expr: expr, via: via})
	case CmdEdit:
		if c.Rest == "" {
			return s.editText(ctx, sc, sess, c.ID, c.Text)
		}
		rec, _, err := s.loadRecord(ctx, sc, c.ID)
		if err != nil {
			return changeOutcome{}, err
		}
		if rec == nil || rec.Session != sess {
			return changeOutcome{}, errNotFound
		}
		p, f := when.PlanWhen(c.Rest, rec.Message, true, when.ScheduleInput{Now: s.now(), Zone: set.Zone, MinEvery: s.cfg.MinEvery})
		if f != nil {
			return changeOutcome{}, f
		}
		return s.editTime(ctx, sc, sess, c.ID, p)
	case CmdPause:
		return s.pause(ctx, sc, sess, c.ID)
	case CmdResume:
		return s.resumeHeld(ctx, sc, sess, c.ID)
	}
	return changeOutcome{}, fail("internal", "", nil)
}
