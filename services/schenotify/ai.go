package schenotify

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/schenotify/when"
)

// AI-written reminders (docs/reminders.md): a reminder whose message is a
// prompt. At the due second the delivery asks the host's LLM (the
// invoke_llm host action) and sends its answer under the same idempotency
// key, hold and retry as fixed text; without an answer it sends a fallback
// that names the reminder and says why. Prompts and answers are chat
// text: never logged, never span attributes.

// Reminder kinds (Record.Kind).
const (
	// kindText is fixed text, the default; records stored before kinds
	// existed have no kind and read as fixed text.
	kindText = ""
	// kindAI: Message is a prompt the host's LLM answers at the due time.
	kindAI = "ai"
)

// Installation config of the AI-written form (setting ai_calls_per_day).
const (
	// defaultAICallsPerDay is how many AI-written deliveries an
	// installation may make per day (its zone's calendar day) by default.
	defaultAICallsPerDay = 50
	// maxAIAnswerRunes caps the delivered answer (a chat message).
	maxAIAnswerRunes = 2000
	// defaultLLMTimeout bounds one invoke_llm of a delivery
	// (Config.LLMTimeout).
	defaultLLMTimeout = 20 * time.Second
)

// Why an AI-written delivery sent its fallback (catalogue ai.why_*).
const (
	aiWhyFailed   = "failed"
	aiWhyNoModel  = "no_model"
	aiWhyBudget   = "budget"
	aiWhyDisabled = "disabled"
)

// cutAIKeyword reports whether a reminder text asks for the AI-written
// form, and returns the prompt after the keyword: "ai:" at the start, in
// any case, with an ASCII or a full-width colon ("AI: 总结本周的讨论",
// "ai： today's weather").
func cutAIKeyword(text string) (prompt string, ok bool) {
	t := strings.TrimLeft(text, " \t\u3000")
	if len(t) < 3 || !strings.EqualFold(t[:2], "ai") {
		return text, false
	}
	rest := t[2:]
	switch {
	case strings.HasPrefix(rest, ":"):
		rest = rest[1:]
	case strings.HasPrefix(rest, "："):
		rest = rest[len("："):]
	default:
		return text, false
	}
	return strings.TrimSpace(rest), true
}

// checkAIAdd refuses an AI-written reminder without a prompt, or while the
// installation has the form turned off (ai_calls_per_day 0).
func checkAIAdd(set Settings, prompt string) *when.Failure {
	if strings.TrimSpace(prompt) == "" {
		return fail("ai_no_prompt", "message", nil)
	}
	if set.AICallsPerDay <= 0 {
		return fail("ai_disabled", "", nil)
	}
	return nil
}

// aiNote is the line a created AI-written reminder's confirmation ends
// with.
func (rd Renderer) aiNote(set Settings) string {
	return rd.text(set, "note.ai", map[string]string{"limit": strconv.Itoa(set.AICallsPerDay)})
}

// kindMark is what lists put before an AI-written reminder's prompt.
func (rd Renderer) kindMark(set Settings, rec *Record) string {
	if rec.Kind == kindAI {
		return rd.text(set, "word.ai", nil)
	}
	return ""
}

// aiCharge is the budget decision of one AI-written delivery, taken by
// render: while a held delivery waits for its instant (so the LLM request
// goes out at the due second), or at the send.
type aiCharge struct {
	set Settings
	why string // "" when the LLM may be asked, else the fallback's reason
}

// chargeAI takes the budget decision of the AI-written delivery c, sent at
// at (its day in the installation's zone is the budget's day).
func (d *delivery) chargeAI(ctx context.Context, c *claimed, set Settings, at time.Time) *aiCharge {
	ch := &aiCharge{set: set}
	if _, ok := c.rec.storedAnswer(c.occ); ok {
		return ch // answered and charged on an earlier attempt
	}
	if set.AICallsPerDay <= 0 {
		ch.why = aiWhyDisabled
		return ch
	}
	ok, err := d.charge(ctx, c.sc, set.AICallsPerDay, at.In(set.Zone).Format(time.DateOnly), c.rec.ID+":"+c.occ.UTC().Format(time.RFC3339))
	switch {
	case err != nil:
		d.log.WarnContext(ctx, "ai budget not read", "scope", c.sc.String(), "id", c.rec.ID, "err", err)
		ch.why = aiWhyFailed
	case !ok:
		ch.why = aiWhyBudget
	}
	return ch
}

// charge takes one call of the day's budget (<scope>.aibudget) for
// occurrence key occ (bus.DailyBudget: charged once per occurrence); it
// reports whether the LLM may be asked.
func (d *delivery) charge(ctx context.Context, sc binding.Scope, limit int, day, occ string) (bool, error) {
	d.rem.writes.Add(1)
	ok, err := bus.NewDailyBudget(d.runner.KV(), keyAIBudget, nil).Charge(ctx, sc, limit, day, occ)
	if err != nil {
		return false, storeErr("ai budget", err)
	}
	return ok, nil
}

// claimExtra is how much longer than a fixed text's the send claim of rec
// holds: an AI-written one also covers its LLM call.
func (d *delivery) claimExtra(rec *Record) time.Duration {
	if rec.Kind == kindAI {
		return d.llmTimeout
	}
	return 0
}

// writeAI replaces the message of an AI-written delivery by the LLM's
// answer, or by the fallback. It runs at the instant of the send, just
// before it, on every path (fired, held, next message).
func (d *delivery) writeAI(ctx context.Context, c *claimed) {
	ch := c.out.ai
	if ch == nil {
		return
	}
	set, why := ch.set, ch.why
	answer, stored := c.rec.storedAnswer(c.occ)
	if !stored && why == "" {
		answer, why = d.askLLM(ctx, c, set)
		if why == "" {
			d.keepAnswer(c, answer)
		}
	}
	now := d.now()
	var text string
	if why == "" {
		r := *c.rec
		r.Message = answer
		skipped := 0
		if c.out.rule != nil {
			skipped = c.out.rule.Skipped(c.occ, now, c.out.loc, 10000)
		}
		text = d.rd.DeliveryText(set, &r, c.occ, now, skipped) + d.rd.calendarNote(set, c.out.calendarEnd)
	} else {
		d.metrics.deliveries.WithLabelValues(outcomeAIFallback).Inc()
		args := map[string]string{"id": c.rec.ID, "prompt": preview(c.rec.Message, listPreviewRunes), "limit": strconv.Itoa(set.AICallsPerDay)}
		args["why"] = d.rd.text(set, "ai.why_"+why, args)
		text = set.Prefix + d.rd.text(set, "deliver.ai_fallback", args) + d.rd.calendarNote(set, c.out.calendarEnd)
	}
	c.out.msg.MessageChain = deliveryChain(set, c.rec, text)
}

// storedAnswer is the LLM answer kept for occurrence occ, if any.
func (r *Record) storedAnswer(occ time.Time) (string, bool) {
	if r.Kind != kindAI || r.AIAnswer == nil || !r.AIAnswer.Occurrence.Equal(occ) {
		return "", false
	}
	return r.AIAnswer.Text, true
}

// keepAnswer puts answer into the claimed record, in memory: the send's
// outcome write (a retry, a refusal, a pause) stores it with the rest, so
// a retry of the occurrence (on any replica) sends the same text under the
// same idempotency key instead of asking the LLM again, and a delivered
// occurrence clears it (advance). It costs no write of its own: a burst of
// AI-written reminders due in one second must not pay one more KV write
// each before its sends. Only a crash between the answer and the outcome
// write loses it; the retry then asks again.
func (d *delivery) keepAnswer(c *claimed, answer string) {
	r := *c.rec
	r.AIAnswer = &aiAnswer{Occurrence: c.occ.UTC(), Text: answer}
	c.rec = &r
}

// askLLM asks the host's LLM for the text of c; why is "" with an answer,
// else the fallback's reason. The call leaves the send its own timeout
// within ctx.
func (d *delivery) askLLM(ctx context.Context, c *claimed, set Settings) (answer, why string) {
	limit := d.llmTimeout
	if dl, ok := ctx.Deadline(); ok {
		limit = min(limit, time.Until(dl)-d.hostTimeout-time.Second)
	}
	if limit <= 0 {
		return "", aiWhyFailed
	}
	lctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	ans, err := d.host.InvokeLLM(lctx, c.auth.Binding, wire.InvokeLLM{Messages: []wire.LLMMessage{
		{Role: wire.RoleSystem, Content: aiSystemPrompt(set, d.now())},
		{Role: wire.RoleUser, Content: c.rec.Message},
	}})
	switch {
	case errors.Is(err, wire.ErrNoLLMModel):
		return "", aiWhyNoModel
	case err != nil:
		// errorDetail names the code only, never the prompt or the answer.
		d.log.WarnContext(ctx, "ai reminder not written", "scope", c.sc.String(), "id", c.rec.ID, "err", errorDetail(err))
		return "", aiWhyFailed
	}
	text := strings.TrimSpace(ans.Text)
	if text == "" {
		return "", aiWhyFailed
	}
	return cutRunes(text, maxAIAnswerRunes), ""
}

// aiSystemPrompt tells the model what it writes and when.
func aiSystemPrompt(set Settings, now time.Time) string {
	lang := "English"
	if set.Language != "" && set.Language != "en_US" {
		lang = "Simplified Chinese"
	}
	return "You write a scheduled reminder that is being posted into a chat now (" + when.Local(now, set.Zone) + ", " +
		now.In(set.Zone).Weekday().String() + ", " + set.Zone.String() + "). Follow the user's request and answer with the message " +
		"text only, briefly, in the language of the request (if unclear, " + lang + ")."
}
