package schenotify

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
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
	// KindText is fixed text, the default; records stored before kinds
	// existed have no kind and read as fixed text.
	KindText = ""
	// KindAI: Message is a prompt the host's LLM answers at the due time.
	KindAI = "ai"
)

// Installation config of the AI-written form (setting ai_calls_per_day).
const (
	// DefaultAICallsPerDay is how many AI-written deliveries an
	// installation may make per day (its zone's calendar day) by default.
	DefaultAICallsPerDay = 50
	// maxAIAnswerRunes caps the delivered answer (a chat message).
	maxAIAnswerRunes = 2000
	// defaultLLMTimeout bounds one invoke_llm of a delivery.
	defaultLLMTimeout = 20 * time.Second
)

// keyAIBudget is the key of a scope's AI call budget: <scope>.aibudget.
const keyAIBudget = "aibudget"

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
	if rec.Kind == KindAI {
		return rd.text(set, "word.ai", nil)
	}
	return ""
}

// AIBudget is <scope>.aibudget: the AI-written deliveries of one day.
type AIBudget struct {
	V int `json:"v"`
	// Day is the installation zone's date the counts belong to
	// (YYYY-MM-DD); another day starts from zero.
	Day  string `json:"day"`
	Used int    `json:"used"`
	// Charged are the occurrences charged on Day (<id>:<occurrence>), so a
	// retried delivery of one occurrence is charged once.
	Charged []string `json:"charged"`
}

func (s *Service) aiBudgets() *bus.Records[AIBudget] {
	return bus.NewRecords(s.runner.KV(), keyAIBudget, bus.RecordsConfig[AIBudget]{})
}

// aiCharge is the budget decision of one AI-written delivery, taken
// while a held delivery waits for its instant (so the LLM request goes out
// at the due second) or at the send.
type aiCharge struct {
	set Settings
	why string // "" when the LLM may be asked, else the fallback's reason
}

// chargeAI takes the budget decision of an AI-written delivery of
// occurrence occ sent at (its day in the installation's zone is the
// budget's day) and keeps it in out; fixed text passes unchanged.
func (s *Service) chargeAI(ctx context.Context, sc binding.Scope, auth *bus.Authority, rec *Record, occ, at time.Time, out outgoing) outgoing {
	if rec.Kind != KindAI {
		return out
	}
	cfg, err := s.runner.OpenConfig(sc, auth)
	if err != nil {
		cfg = nil
	}
	c := &aiCharge{set: NormalizeConfig(cfg, s.zone)}
	out.ai = c
	if c.set.AICallsPerDay <= 0 {
		c.why = aiWhyDisabled
		return out
	}
	ok, err := s.charge(ctx, sc, c.set.AICallsPerDay, at.In(c.set.Zone).Format(time.DateOnly), rec.ID+":"+occ.UTC().Format(time.RFC3339))
	switch {
	case err != nil:
		s.log.WarnContext(ctx, "ai budget not read", "scope", sc.String(), "id", rec.ID, "err", err)
		c.why = aiWhyFailed
	case !ok:
		c.why = aiWhyBudget
	}
	return out
}

// charge takes one call of the day's budget for occurrence key occ,
// unless occ was charged already; it reports whether the LLM may be
// asked. A stored later day (another replica's clock ahead) is kept: the
// count never goes back to an earlier day.
func (s *Service) charge(ctx context.Context, sc binding.Scope, limit int, day, occ string) (bool, error) {
	allowed := false
	_, _, err := s.aiBudgets().Update(ctx, sc, func(cur *AIBudget) (*AIBudget, error) {
		b := AIBudget{V: 1, Day: day}
		if cur != nil && cur.Day >= day {
			b = *cur
			b.Charged = slices.Clone(cur.Charged)
		}
		switch {
		case slices.Contains(b.Charged, occ):
			allowed = true
			return nil, bus.ErrNoChange
		case b.Used >= limit:
			allowed = false
			return nil, bus.ErrNoChange
		}
		allowed = true
		b.Used++
		b.Charged = append(b.Charged, occ)
		return &b, nil
	})
	if err != nil {
		return false, storeErr("ai budget", err)
	}
	return allowed, nil
}

// llmTimeout bounds one invoke_llm of a delivery.
func (s *Service) llmTimeout() time.Duration { return s.cfg.LLMTimeout }

// claimFor is how long a send claim of rec holds: an AI-written one also
// covers its LLM call.
func (s *Service) claimFor(rec *Record) time.Duration {
	if rec.Kind == KindAI {
		return s.cfg.Claim + s.llmTimeout()
	}
	return s.cfg.Claim
}

// aiOutgoing replaces the message of an AI-written reminder's delivery by
// the LLM's answer, or by the fallback; out is returned unchanged for
// fixed text. It runs at the due second, after the claim (and the budget
// decision, taken here unless the held delivery took it while waiting).
func (s *Service) aiOutgoing(ctx context.Context, sc binding.Scope, auth *bus.Authority, rec *Record, occ time.Time, out outgoing) outgoing {
	if rec.Kind != KindAI {
		return out
	}
	if out.ai == nil {
		out = s.chargeAI(ctx, sc, auth, rec, occ, s.now(), out)
	}
	set, why := out.ai.set, out.ai.why
	var answer string
	if why == "" {
		answer, why = s.aiAnswer(ctx, sc, auth, set, rec)
	}
	now := s.now()
	var text string
	if why == "" {
		r := *rec
		r.Message = answer
		skipped := 0
		if out.rule != nil {
			skipped = out.rule.Skipped(occ, now, out.loc, 10000)
		}
		text = s.rd.DeliveryText(set, &r, occ, now, skipped)
	} else {
		s.metrics.deliveries.WithLabelValues(OutcomeAIFallback).Inc()
		args := map[string]string{"id": rec.ID, "prompt": Preview(rec.Message, listPreviewRunes), "limit": strconv.Itoa(set.AICallsPerDay)}
		args["why"] = s.rd.text(set, "ai.why_"+why, args)
		text = set.Prefix + s.rd.text(set, "deliver.ai_fallback", args)
	}
	out.msg.MessageChain = deliveryChain(set, rec, text)
	return out
}

// aiAnswer asks the host's LLM for rec's text; why is "" with an answer,
// else the fallback's reason. The call leaves the send its own timeout
// within ctx.
func (s *Service) aiAnswer(ctx context.Context, sc binding.Scope, auth *bus.Authority, set Settings, rec *Record) (answer, why string) {
	if h := s.hooks.beforeLLM; h != nil {
		h(ctx, sc, rec.ID)
	}
	limit := s.llmTimeout()
	if dl, ok := ctx.Deadline(); ok {
		limit = min(limit, time.Until(dl)-s.cfg.HostTimeout-time.Second)
	}
	if limit <= 0 {
		return "", aiWhyFailed
	}
	lctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	now := s.now()
	ans, err := s.runner.Host().InvokeLLM(lctx, auth.Binding, bus.InvokeLLM{Messages: []bus.LLMMessage{
		{Role: bus.RoleSystem, Content: aiSystemPrompt(set, now)},
		{Role: bus.RoleUser, Content: rec.Message},
	}})
	switch {
	case errors.Is(err, bus.ErrNoLLMModel):
		return "", aiWhyNoModel
	case err != nil:
		// errorDetail names the code only, never the prompt or the answer.
		s.log.WarnContext(ctx, "ai reminder not written", "scope", sc.String(), "id", rec.ID, "err", errorDetail(err))
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
