package schenotify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/services/schenotify/when"
)

// Tool names (spec 3).
const (
	ToolNow      = "get_current_time_str"
	ToolSchedule = "schedule_notify"
	ToolList     = "list_notifications"
	ToolCancel   = "cancel_notification"
)

// dedupes reports whether an invocation changes state (DESIGN 3.1): adds
// and deletes do, lists and the clock do not.
func dedupes(inv *bus.Invocation) bool {
	switch {
	case inv.Tool != nil:
		return inv.Tool.Name == ToolSchedule || inv.Tool.Name == ToolCancel
	case inv.Command != nil:
		switch inv.Command.Name {
		case "dsche":
			return true
		case "sche":
			toks := tokens(inv.Command.Params)
			return len(toks) > 0 && strings.EqualFold(FoldWidth(toks[0]), "add")
		}
	}
	return false
}

// sessionOf converts the envelope's session.
func sessionOf(s bus.Session) SessionIn {
	raw := func(id bus.ID) json.RawMessage {
		if id == "" {
			return nil
		}
		b, _ := json.Marshal(string(id))
		return b
	}
	return SessionIn{LauncherType: s.LauncherType, LauncherID: raw(s.LauncherID), SenderID: raw(s.SenderID), BotUUID: s.BotUUID}
}

// internalFailure maps an unexpected error to unavailable (storage) or
// internal (anything else); the cause is logged, never returned.
func (s *Service) internalFailure(ctx context.Context, inv *bus.Invocation, err error) *when.Failure {
	s.log.ErrorContext(ctx, "invocation failed", "scope", inv.Scope.String(), "name", inv.Name(), "err", err)
	if errors.Is(err, errStore) {
		return fail("unavailable", "", nil)
	}
	return fail("internal", "", nil)
}

func (s *Service) handleTool(ctx context.Context, inv *bus.Invocation) (any, error) {
	set := NormalizeConfig(inv.Config, s.zone)
	now := s.now()
	result := func(v any) (any, error) { return bus.ToolReply{Result: v}, nil }
	failed := func(f *when.Failure) (any, error) {
		if f.Code == "unavailable" || f.Code == "internal" {
			// spec 3.1.5: not kept for retries, so a retry runs again
			return bus.NotFinal(bus.ToolReply{Result: s.rd.ToolError(set, f)}), nil
		}
		return result(s.rd.ToolError(set, f))
	}
	switch inv.Tool.Name {
	case ToolNow:
		return result(s.rd.Now(set, now))
	case ToolSchedule:
		var params map[string]json.RawMessage
		if json.Unmarshal(inv.Tool.Parameters, &params) != nil {
			params = nil
		}
		plan, f := when.PlanTool(params, when.ScheduleInput{Now: now, Zone: set.Zone, MinEvery: s.cfg.MinEvery})
		if f != nil {
			return failed(f)
		}
		sess, sender, ok := sessionOf(inv.Tool.Session).Resolve()
		if !ok {
			return failed(fail("no_session", "", nil))
		}
		id, err := s.add(ctx, addRequest{scope: inv.Scope, invID: inv.ID, settings: set, session: sess, sender: sender, plan: plan, via: ViaTool})
		var vf *when.Failure
		if errors.As(err, &vf) {
			return failed(vf)
		}
		if err != nil {
			return failed(s.internalFailure(ctx, inv, err))
		}
		return result(s.rd.ScheduleResult(set, id, plan, now))
	case ToolList:
		sess, _, ok := sessionOf(inv.Tool.Session).Resolve()
		if !ok {
			return failed(fail("no_session", "", nil))
		}
		recs, err := s.sessionRecords(ctx, inv.Scope, sess)
		if err != nil {
			return failed(s.internalFailure(ctx, inv, err))
		}
		return result(s.rd.List(set, recs, now))
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
		sess, _, ok := sessionOf(inv.Tool.Session).Resolve()
		if !ok {
			return failed(fail("no_session", "", nil))
		}
		notFound := fail("not_found", "id", map[string]string{"id": idText})
		id, ok := NormalizeID(strings.TrimSpace(idText))
		if !ok {
			return failed(notFound)
		}
		rec, inFlight, found, err := s.remove(ctx, inv.Scope, sess, id)
		if err != nil {
			return failed(s.internalFailure(ctx, inv, err))
		}
		if !found {
			return failed(notFound)
		}
		return result(s.rd.Cancelled(set, rec, inFlight))
	}
	return nil, bus.Errorf(bus.ErrNotFound, "schenotify has no tool %q", safeName(inv.Tool.Name))
}

// safeName shortens a caller-given name for an error message.
func safeName(s string) string { return cutRunes(Preview(s, 64), 64) }
