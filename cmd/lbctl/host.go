package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// startHost answers host actions on subj.HostAll(), printing each
// send_message. seen, when not nil, receives every send. Each action is a
// SERVER span of tp, child of the caller's trace.
func startHost(nc *nats.Conn, subj wire.Subjects, out io.Writer, tp trace.TracerProvider, seen func(wire.SendMessage)) (*nats.Subscription, error) {
	var mu sync.Mutex
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	tracer := tp.Tracer("github.com/langbot-nats/plugins/cmd/lbctl")
	return nc.Subscribe(subj.HostAll(), func(m *nats.Msg) {
		action, sc, err := subj.ParseHostAction(m.Subject)
		if err != nil {
			return
		}
		_, span := tracer.Start(bus.Extract(context.Background(), m.Header), "process "+subj.HostActionAll(action),
			trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(bus.MessagingAttrs(m.Subject, subj.HostActionAll(action), "process", action)...),
			trace.WithAttributes(bus.AttrScope.String(sc.String())))
		defer span.End()
		var req wire.HostRequest
		if err := json.Unmarshal(m.Data, &req); err != nil {
			_ = m.RespondMsg(errorReply(wire.Errorf(wire.ErrBadRequest, "malformed host request")))
			return
		}
		switch action {
		case wire.ActionSendMessage:
			var sm wire.SendMessage
			if err := json.Unmarshal(req.Data, &sm); err != nil {
				_ = m.RespondMsg(errorReply(wire.Errorf(wire.ErrBadRequest, "malformed send_message data")))
				return
			}
			mu.Lock()
			fmt.Fprintf(out, "\n[%s → %s %s via %s] %s\n", req.Plugin, sm.TargetType, sm.TargetID, sm.BotUUID, chainText(sm.MessageChain))
			mu.Unlock()
			if seen != nil {
				seen(sm)
			}
			_ = m.Respond([]byte(`{}`))
		case wire.ActionGetBotInfo:
			var d struct {
				BotUUID string `json:"bot_uuid"`
			}
			_ = json.Unmarshal(req.Data, &d)
			b, _ := json.Marshal(map[string]any{"bot": wire.BotInfo{UUID: d.BotUUID, Name: "Dev Bot", Adapter: "lbctl-dev"}})
			_ = m.Respond(b)
		case wire.ActionGetBots:
			_ = m.Respond([]byte(`{"bots":[{"uuid":"dev-bot","name":"Dev Bot","adapter":"lbctl-dev"}]}`))
		case wire.ActionInvokeLLM:
			// The dev host has no model: it echoes the last message, so an
			// AI-written reminder can be tried without one.
			var d wire.InvokeLLM
			if err := json.Unmarshal(req.Data, &d); err != nil || len(d.Messages) == 0 {
				_ = m.RespondMsg(errorReply(wire.Errorf(wire.ErrBadRequest, "malformed invoke_llm data")))
				return
			}
			b, _ := json.Marshal(wire.LLMAnswer{Text: "(dev LLM) " + d.Messages[len(d.Messages)-1].Content, Model: "lbctl-dev"})
			_ = m.Respond(b)
		default:
			_ = m.RespondMsg(errorReply(wire.Errorf(wire.ErrNotFound, "unknown host action %q for %s", action, sc)))
		}
	})
}

func errorReply(e *wire.Error) *nats.Msg {
	h := nats.Header{}
	h.Set(wire.HeaderServiceError, e.Word)
	h.Set(wire.HeaderServiceCode, fmt.Sprint(e.Code))
	body, _ := json.Marshal(map[string]any{"error": map[string]string{"code": e.Word, "message": e.Message}})
	return &nats.Msg{Header: h, Data: body}
}

// chainText renders a message chain for the terminal.
func chainText(chain []wire.Component) string {
	var b strings.Builder
	for _, c := range chain {
		switch c.Type {
		case "Plain":
			b.WriteString(c.Text)
		case "Image":
			b.WriteString("[image]")
		case "File":
			b.WriteString("[file " + c.Name + "]")
		case "At":
			b.WriteString("@" + string(c.Target) + " ")
		default:
			b.WriteString("[" + c.Type + "]")
		}
	}
	return b.String()
}
