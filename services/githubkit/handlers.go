package githubkit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/plugin"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/githubkit/events"
	"github.com/langbot-nats/plugins/services/githubkit/ghclient"
)

// The service's handlers: each decodes its invocation, calls one part (or
// the query and tool code, which need no part) and encodes the reply.

func (s *Service) handleCommand(ctx context.Context, inv *bus.Invocation) (any, error) {
	ctx = ghclient.WithInstallation(ctx, inv.Scope.String())
	cmd := inv.Command
	if !strings.EqualFold(cmd.Name, CommandWord) {
		return nil, wire.Errorf(wire.ErrNotFound, "githubkit serves only the gh command")
	}
	st, _ := s.settings(inv.Config)
	x := s.texts(st.Language)
	p := events.ParseCommand(cmd.Params)
	prefix := plugin.CommandPrefix(plugin.TypedPrefix(CommandWord, cmd.Prefix, cmd.FullText), st.CommandPrefix)
	ctx, span := s.tracer.Start(ctx, "githubkit.command", trace.WithAttributes(
		attribute.String("githubkit.subcommand", p.Sub), bus.AttrScope.String(inv.Scope.String())))
	defer span.End()

	var text string
	var err error
	switch p.Sub {
	case events.SubSub:
		if isOrgArg(p.Arg(0)) {
			text, err = s.orgs.subscribe(ctx, inv, st, x, p, prefix)
			break
		}
		text, err = s.subs.subscribe(ctx, inv, st, x, p, prefix)
	case events.SubUnsub:
		if isOrgArg(p.Arg(0)) {
			text, err = s.orgs.unsubscribe(ctx, inv, st, x, p.Args[0])
			break
		}
		text, err = s.subs.unsubscribe(ctx, inv, st, x, p, prefix)
	case events.SubSubs:
		text, err = s.subs.listSubs(ctx, inv, x, prefix)
		if id, ok := identity(inv.Command); ok && err == nil {
			if l := s.orgs.listLines(ctx, inv.Scope, id, x, prefix); l != "" {
				text += "\n" + l
			}
		}
	case events.SubReviews:
		text, err = s.revs.command(ctx, inv, st, x, p, prefix)
	case events.SubMe:
		text, err = s.me.command(ctx, inv, x, p, prefix)
	case events.SubSummary:
		text, err = s.sums.command(ctx, inv, st, x, p.Args, prefix)
	case events.SubHook:
		req, reply, ok := s.wh.readHook(inv, st, x, p, prefix)
		switch {
		case !ok:
			text = reply
		case req.org:
			text, err = s.orgs.hookCommand(ctx, inv, x, req, prefix)
		default:
			text, err = s.wh.hookCommand(ctx, inv, x, req, prefix)
		}
	case events.SubCards:
		text, err = s.cards.command(ctx, inv, st, x, p, prefix)
	case events.SubQuiet:
		text, err = s.noise.quietCommand(ctx, inv, st, x, p, prefix)
	case events.SubDigest:
		text, err = s.noise.digestCommand(ctx, inv, st, x, p, prefix)
	default:
		text = x.queryCommand(ctx, s.gh, st, p, prefix)
		if p.Sub == events.SubHelp && s.cfg.WebhookURL != "" {
			text += "\n" + x.T("help.hook", "prefix", prefix)
		}
		if p.Sub == events.SubHelp {
			text += "\n" + x.T("help.feat", "prefix", prefix)
		}
	}
	if err != nil {
		span.SetStatus(codes.Error, "command failed")
		return nil, err
	}
	return wire.CommandReply{Returns: []wire.Return{{Text: text}}}, nil
}

func (s *Service) handleTool(ctx context.Context, inv *bus.Invocation) (any, error) {
	ctx = ghclient.WithInstallation(ctx, inv.Scope.String())
	st, _ := s.settings(inv.Config)
	ctx, span := s.tracer.Start(ctx, "githubkit.tool", trace.WithAttributes(
		attribute.String("githubkit.tool", inv.Tool.Name), bus.AttrScope.String(inv.Scope.String())))
	defer span.End()
	res, err := runTool(ctx, s.gh, st, inv.Tool.Name, inv.Tool.Parameters)
	if errors.Is(err, errUnknownTool) {
		return nil, wire.Errorf(wire.ErrNotFound, "githubkit has no such tool")
	}
	return wire.ToolReply{Result: res}, nil
}

// handleEvent answers a message event at once and queues its cards.
func (s *Service) handleEvent(ctx context.Context, inv *bus.Invocation) (any, error) {
	ev := inv.Event
	reply := wire.EventReply{}
	if ev.Name != eventPersonMessage && ev.Name != EventGroupMessage {
		return reply, nil
	}
	st, _ := s.settings(inv.Config)
	if !st.LinkCards || st.APIErr != nil {
		return reply, nil
	}
	var data cardEventData
	if json.Unmarshal(ev.Data, &data) != nil {
		return reply, nil // an event githubkit cannot read passes unchanged
	}
	text := data.text()
	if isCommand(text) {
		return reply, nil
	}
	links := events.ParseLinks(text, apiHost(st))
	chat := Identity{BotUUID: strings.TrimSpace(ev.BotUUID), TargetType: data.LauncherType, TargetID: data.LauncherID.String()}
	if len(links) == 0 || chat.BotUUID == "" || chat.TargetID == "" || (chat.TargetType != wire.LauncherPerson && chat.TargetType != wire.LauncherGroup) {
		return reply, nil
	}
	origin := string(ev.QueryUUID)
	if origin == "" {
		origin = inv.ID
	}
	sum := sha256.Sum256([]byte(origin))
	j := &cardJob{sc: inv.Scope, b: inv.Binding, st: st, chat: chat, sender: data.SenderID.String(), links: links,
		idem: "githubkit:" + inv.Scope.String() + ":card:" + hex.EncodeToString(sum[:16]), link: trace.SpanContextFromContext(ctx)}
	if out := s.cards.state.enqueue(j); out != cardQueued {
		s.cards.outcome.WithLabelValues(out).Inc()
	}
	return reply, nil
}

// WebhookHandler returns the receiver's HTTP handler. It serves
// POST WebhookPath<hook-id> and answers anything else 404 or 405; mount
// it on WebhookPath.
func (s *Service) WebhookHandler() http.Handler { return http.HandlerFunc(s.rx.serveWebhook) }

// hookReply answers a delivery with a short plain-text reason.
func hookReply(w http.ResponseWriter, status int, reason string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(reason + "\n"))
}
