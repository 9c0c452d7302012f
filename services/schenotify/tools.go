package schenotify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/schenotify/when"
)

// Tool names (spec 3).
const (
	ToolNow      = "get_current_time_str"
	ToolSchedule = "schedule_notify"
	ToolList     = "list_notifications"
	ToolCancel   = "cancel_notification"
	ToolSnooze   = "snooze_notification"
	ToolEdit     = "edit_notification"
	ToolPause    = "pause_notification"
	ToolResume   = "resume_notification"
)

// changeTools maps the change tools to their command kind.
var changeTools = map[string]string{ToolSnooze: cmdSnooze, ToolEdit: cmdEdit, ToolPause: cmdPause, ToolResume: cmdResume}

// dedupes reports whether an invocation changes state (DESIGN 3.1): adds
// and deletes do, lists and the clock do not.
func dedupes(inv *bus.Invocation) bool {
	switch {
	case inv.Tool != nil:
		_, change := changeTools[inv.Tool.Name]
		return inv.Tool.Name == ToolSchedule || inv.Tool.Name == ToolCancel || change
	case inv.Command != nil:
		switch inv.Command.Name {
		case "dsche":
			return true
		case "sche":
			toks := tokens(inv.Command.Params)
			if len(toks) == 0 {
				return false
			}
			_, change := changeVerbs[strings.ToLower(foldWidth(toks[0]))]
			return strings.EqualFold(foldWidth(toks[0]), "add") || change
		}
	}
	return false
}

// sessionOf converts the envelope's session.
func sessionOf(s wire.Session) sessionIn {
	raw := func(id wire.ID) json.RawMessage {
		if id == "" {
			return nil
		}
		b, _ := json.Marshal(string(id))
		return b
	}
	return sessionIn{LauncherType: s.LauncherType, LauncherID: raw(s.LauncherID), SenderID: raw(s.SenderID), BotUUID: s.BotUUID}
}

// internalFailure maps an unexpected error to unavailable (storage) or
// internal (anything else); the cause is logged, never returned.
func (rp *replies) internalFailure(ctx context.Context, inv *bus.Invocation, err error) *when.Failure {
	rp.log.ErrorContext(ctx, "invocation failed", "scope", inv.Scope.String(), "name", inv.Name(), "err", err)
	if errors.Is(err, errStore) {
		return fail("unavailable", "", nil)
	}
	return fail("internal", "", nil)
}

func (rp *replies) tool(ctx context.Context, inv *bus.Invocation) (any, error) {
	set := NormalizeConfig(inv.Config, rp.zone)
	now := rp.now()
	result := func(v any) (any, error) { return wire.ToolReply{Result: v}, nil }
	failed := func(f *when.Failure) (any, error) {
		if f.Code == "unavailable" || f.Code == "internal" {
			// spec 3.1.5: not kept for retries, so a retry runs again
			return bus.NotFinal(wire.ToolReply{Result: rp.rd.ToolError(set, f)}), nil
		}
		return result(rp.rd.ToolError(set, f))
	}
	switch inv.Tool.Name {
	case ToolNow:
		return result(rp.rd.Now(set, now))
	case ToolSchedule:
		var params map[string]json.RawMessage
		if json.Unmarshal(inv.Tool.Parameters, &params) != nil {
			params = nil
		}
		plan, f := when.PlanTool(params, when.ScheduleInput{Now: now, Zone: set.Zone, MinEvery: rp.minEvery})
		if f != nil {
			return failed(f)
		}
		var mentions []string
		if raw := bytes.TrimSpace(params["mentions"]); len(raw) > 0 && !bytes.Equal(raw, []byte("null")) {
			var ids []string
			if json.Unmarshal(raw, &ids) != nil {
				return failed(fail("invalid_param", "mentions", map[string]string{"field": "mentions"}))
			}
			var ok bool
			if mentions, ok = validMentions(ids); !ok {
				return failed(mentionsFailure("mentions"))
			}
		}
		kind := kindText
		if raw := bytes.TrimSpace(params["ai"]); len(raw) > 0 && !bytes.Equal(raw, []byte("null")) {
			var ai bool
			if json.Unmarshal(raw, &ai) != nil {
				return failed(fail("invalid_param", "ai", map[string]string{"field": "ai"}))
			}
			if ai {
				if f := checkAIAdd(set, plan.Message); f != nil {
					return failed(f)
				}
				kind = kindAI
			}
		}
		sess, sender, ok := sessionOf(inv.Tool.Session).resolve()
		if !ok {
			return failed(fail("no_session", "", nil))
		}
		id, err := rp.rem.add(ctx, addRequest{scope: inv.Scope, invID: inv.ID, settings: set, session: sess, sender: sender, plan: plan, via: viaTool, mentions: mentions, kind: kind})
		var vf *when.Failure
		if errors.As(err, &vf) {
			return failed(vf)
		}
		if err != nil {
			return failed(rp.internalFailure(ctx, inv, err))
		}
		r := rp.rd.ScheduleResult(set, id, plan, now)
		if kind == kindAI {
			r.Kind = kindAI
			r.Text += "\n" + rp.rd.aiNote(set)
		}
		return result(r)
	case ToolList:
		sess, _, ok := sessionOf(inv.Tool.Session).resolve()
		if !ok {
			return failed(fail("no_session", "", nil))
		}
		recs, err := rp.rem.sessionRecords(ctx, inv.Scope, sess)
		if err != nil {
			return failed(rp.internalFailure(ctx, inv, err))
		}
		return result(rp.rd.List(set, recs, now))
	case ToolCancel:
		var params map[string]json.RawMessage
		_ = json.Unmarshal(inv.Tool.Parameters, &params)
		raw := bytes.TrimSpace(params["id"])
		if len(raw) == 0 || bytes.Equal(raw, []byte("null")) || bytes.Equal(raw, []byte(`""`)) {
			return failed(fail("missing_params", "", nil))
		}
		var idText string
		if raw[0] != '"' || json.Unmarshal(raw, &idText) != nil {
			return failed(fail("invalid_param", "id", map[string]string{"field": "id"}))
		}
		sess, _, ok := sessionOf(inv.Tool.Session).resolve()
		if !ok {
			return failed(fail("no_session", "", nil))
		}
		notFound := fail("not_found", "id", map[string]string{"id": idText})
		id, ok := NormalizeID(strings.TrimSpace(idText))
		if !ok {
			return failed(notFound)
		}
		rec, inFlight, found, err := rp.rem.remove(ctx, inv.Scope, sess, id)
		if err != nil {
			return failed(rp.internalFailure(ctx, inv, err))
		}
		if !found {
			return failed(notFound)
		}
		return result(rp.rd.Cancelled(set, rec, inFlight))
	}
	if kind, ok := changeTools[inv.Tool.Name]; ok {
		c, f := changeParams(kind, inv.Tool.Parameters)
		if f != nil {
			return failed(f)
		}
		sess, sender, ok := sessionOf(inv.Tool.Session).resolve()
		if !ok {
			return failed(fail("no_session", "", nil))
		}
		out, err := rp.change(ctx, inv, set, sess, sender, c, viaTool)
		var vf *when.Failure
		switch {
		case errors.Is(err, errNotFound):
			return failed(fail("not_found", "id", map[string]string{"id": c.ID}))
		case errors.As(err, &vf):
			return failed(vf)
		case err != nil:
			return failed(rp.internalFailure(ctx, inv, err))
		}
		return result(rp.rd.changeResult(set, out, now))
	}
	return nil, wire.Errorf(wire.ErrNotFound, "schenotify has no such tool")
}

// changeParams reads the parameters of a change tool: id (required except
// for a snooze, which defaults to the chat's last delivery); a snooze's
// delay or time_str; an edit's time_str (a time or a repeat rule) or
// message. Strings only, as schedule_notify.
func changeParams(kind string, raw json.RawMessage) (command, *when.Failure) {
	var params map[string]json.RawMessage
	_ = json.Unmarshal(raw, &params)
	str := map[string]string{}
	for _, k := range []string{"id", "delay", "time_str", "message"} {
		v := bytes.TrimSpace(params[k])
		if len(v) == 0 || bytes.Equal(v, []byte("null")) {
			continue
		}
		var sv string
		if v[0] != '"' || json.Unmarshal(v, &sv) != nil {
			return command{}, fail("invalid_param", k, map[string]string{"field": k})
		}
		if strings.TrimSpace(sv) != "" {
			str[k] = sv
		}
	}
	c := command{Kind: kind}
	if idText, ok := str["id"]; ok {
		id, ok := NormalizeID(strings.TrimSpace(idText))
		if !ok {
			return command{}, fail("not_found", "id", map[string]string{"id": preview(idText, 32)})
		}
		c.ID = id
	} else if kind != cmdSnooze {
		return command{}, fail("missing_params", "", nil)
	}
	_, hasDelay := str["delay"]
	_, hasTime := str["time_str"]
	switch kind {
	case cmdSnooze:
		if hasDelay && hasTime {
			return command{}, fail("conflicting_params", "delay", nil)
		}
		c.Rest = str["delay"] + str["time_str"]
	case cmdEdit:
		msg, hasMsg := str["message"]
		switch {
		case hasTime && hasMsg:
			return command{}, fail("conflicting_params", "message", nil)
		case hasTime:
			c.Rest = str["time_str"]
		case hasMsg:
			c.Text = msg
		default:
			return command{}, fail("missing_params", "", nil)
		}
	}
	return c, nil
}
