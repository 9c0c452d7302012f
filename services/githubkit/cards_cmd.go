package githubkit

import (
	"context"
	"strings"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/services/githubkit/events"
)

// chatCardChoice is the stored link-card choice of one chat,
// <scope>.cards.<chat sid>. Only "off" is stored: a chat without a record
// gets cards (when the installation's link_cards setting is on).
type chatCardChoice struct {
	V         int       `json:"v"`
	Off       bool      `json:"off"`
	UpdatedAt time.Time `json:"updated_at"`
}

func chatCards(kv *bus.KV) *bus.Records[chatCardChoice] {
	return bus.NewRecords(kv, kindCards, bus.RecordsConfig[chatCardChoice]{})
}

// chatCardsOff reports whether a chat turned link cards off.
func chatCardsOff(ctx context.Context, kv *bus.KV, sc binding.Scope, chat Identity) (bool, error) {
	r, _, err := chatCards(kv).Get(ctx, sc, chat.SID())
	if err != nil {
		return false, err
	}
	return r != nil && r.Off, nil
}

// command is "gh cards [on|off]": the state of this chat, or (admins
// only) a change of it. Turning cards on deletes the record; off writes
// it. Both are idempotent, so a retried invocation needs no dedupe.
func (c *cards) command(ctx context.Context, inv *bus.Invocation, st Settings, x texts, p events.Parsed, prefix string) (string, error) {
	id, ok := identity(inv.Command)
	if !ok {
		return x.T("err.no_bot"), nil
	}
	word := strings.ToLower(p.Arg(0))
	if word != "" && word != "on" && word != "off" {
		return x.Usage(events.SubCards, prefix), nil
	}
	if word != "" && inv.Command.Privilege < adminPrivilege {
		return x.T("cards.admin_only", "prefix", prefix), nil
	}
	kv := c.s.runner.KV()
	switch word {
	case "on":
		if err := chatCards(kv).Delete(ctx, inv.Scope, 0, id.SID()); err != nil {
			return "", errStore(err)
		}
	case "off":
		now := c.s.now().UTC()
		if _, _, err := chatCards(kv).Update(ctx, inv.Scope, func(*chatCardChoice) (*chatCardChoice, error) {
			return &chatCardChoice{V: 1, Off: true, UpdatedAt: now}, nil
		}, id.SID()); err != nil {
			return "", errStore(err)
		}
	}
	off := word == "off"
	if word == "" {
		var err error
		if off, err = chatCardsOff(ctx, kv, inv.Scope, id); err != nil {
			return "", errStore(err)
		}
	}
	out := x.T("cards.on", "prefix", prefix)
	if off {
		out = x.T("cards.off", "prefix", prefix)
	}
	if !st.LinkCards {
		out += "\n" + x.T("cards.installation_off")
	}
	return out, nil
}
