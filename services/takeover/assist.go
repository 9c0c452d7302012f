package takeover

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/settings"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover/model"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

// AI assist (ai_assist, off by default): the two-line handoff
// summary an alert carries and `!ho suggest N`'s draft reply, both written
// by the host's LLM through the invoke_llm host action, within the
// installation's ai_calls_per_day (bus.DailyBudget at <scope>.aiuse, UTC
// days). A failed or refused call never holds up what
// asked for it: the alert goes without its summary, the command says so.
// The transcript, the prompts and the answers are chat text: never logged,
// never span attributes.
//
// assist is the small part both notices (the alert) and ops (suggest)
// call; it calls only the store and the host.
type assist struct {
	st     *store.Store
	runner *bus.Runner // the host; set once the runner exists
	now    clock
	log    *slog.Logger

	timeout      time.Duration // Config.LLMTimeout
	recordBudget time.Duration // Config.RecordBudget: the history's send order
}

// Bounds of what is sent to the LLM and kept of its answer.
const (
	assistEntries      = 30   // newest history entries in the transcript
	assistTranscript   = 6000 // runes of transcript, the newest kept
	assistEntryRunes   = 500  // runes of one entry's text
	assistSummaryRunes = 200  // runes of one summary line
	assistSuggestRunes = 2000 // runes of a suggested reply
)

// errAssistBudget: the installation's LLM calls of the day are used up.
var errAssistBudget = errors.New("takeover: the day's AI calls are used up")

// Purposes of a call (prompts below).
const (
	assistSummary = "summary"
	assistSuggest = "suggest"
)

// ask writes the summary or the suggestion of chat sid from its history.
// It returns errAssistBudget when the day's calls are used up, or the
// store's or host's error.
func (a *assist) ask(ctx context.Context, sc binding.Scope, b binding.Binding, set model.Settings, sid string, rec *model.Record, purpose string) (string, error) {
	entries, _, err := a.st.ReadHistory(ctx, sc, sid)
	if err != nil {
		return "", err
	}
	transcript := a.transcript(visible(entries, rec.Gen, set.HistoryLimit, a.recordBudget))
	if transcript == "" {
		return "", errors.New("takeover: nothing to summarise")
	}
	// Each call is charged: the alert asks once per alert (its first
	// delivery), and each suggest is an operator asking again.
	now := time.UnixMilli(a.now.ms()).UTC()
	key := purpose + ":" + sid + ":" + rand.Text()
	ok, err := a.st.TakeAICall(ctx, sc, now.Format(time.DateOnly), key, set.AICallsPerDay)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", errAssistBudget
	}
	lang := "English"
	if set.Language == model.LanguageZhHans {
		lang = "Simplified Chinese"
	}
	system := "You help a human customer-support operator who is taking over a chat from an AI assistant. " +
		"The transcript below is the chat so far, oldest first. "
	switch purpose {
	case assistSummary:
		system += "Summarise it for the operator in exactly two short lines, in " + lang + ": line 1 what the user wants, " +
			"line 2 what has been said or tried so far. No greeting, no other text."
	default:
		system += "Write the operator's next reply to the user: only the reply text, in the language the user writes in, " +
			"friendly and concise. Do not promise anything the transcript does not support."
	}
	cctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	ans, err := a.runner.Host().InvokeLLM(cctx, b, wire.InvokeLLM{Messages: []wire.LLMMessage{
		{Role: wire.RoleSystem, Content: system},
		{Role: wire.RoleUser, Content: transcript},
	}})
	if err != nil {
		return "", err
	}
	if purpose == assistSummary {
		return summaryLines(ans.Text), nil
	}
	return settings.CutRunes(strings.TrimSpace(ans.Text), assistSuggestRunes), nil
}

// transcript renders the newest entries as "User: …", "AI: …",
// "Operator: …" lines (text parts only, attachments named), newest kept
// within assistTranscript runes.
func (a *assist) transcript(entries []model.Entry) string {
	if len(entries) > assistEntries {
		entries = entries[len(entries)-assistEntries:]
	}
	var lines []string
	total := 0
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		who := "User"
		switch e.Role {
		case model.RoleAI:
			who = "AI"
		case model.RoleHuman:
			who = "Operator"
		case model.RoleNotice:
			who = "Notice"
		}
		var parts []string
		for _, p := range e.Parts {
			switch p.Type {
			case model.PartText:
				parts = append(parts, strings.Join(strings.Fields(p.Text), " "))
			default:
				parts = append(parts, "["+p.Type+"]")
			}
		}
		line := who + ": " + settings.CutRunes(strings.Join(parts, " "), assistEntryRunes)
		total += len([]rune(line)) + 1
		if total > assistTranscript {
			break
		}
		lines = append(lines, line)
	}
	for i, j := 0, len(lines)-1; i < j; i, j = i+1, j-1 {
		lines[i], lines[j] = lines[j], lines[i]
	}
	return strings.Join(lines, "\n")
}

// summaryLines keeps the first two non-empty lines of an answer, each
// capped.
func summaryLines(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		out = append(out, settings.CutRunes(l, assistSummaryRunes))
		if len(out) == 2 {
			break
		}
	}
	return strings.Join(out, "\n")
}

// alertSummary is the summary an alert carries, "" when the installation
// has no AI assist or the call failed (logged without text).
func (a *assist) alertSummary(ctx context.Context, sc binding.Scope, b binding.Binding, set model.Settings, sid string) string {
	if !set.AIAssist {
		return ""
	}
	rec, _, err := a.st.GetRecord(ctx, sc, sid)
	if err != nil || rec == nil {
		return ""
	}
	s, err := a.ask(ctx, sc, b, set, sid, rec, assistSummary)
	if err != nil {
		a.log.WarnContext(ctx, "the alert goes without its AI summary", "scope", sc.String(), "sid", sid, "err", err)
		return ""
	}
	return s
}

// suggestCommand serves `!ho suggest N`: an AI draft of the operator's
// next reply, which `!ho reply N` sends as it is or edited.
func (o *ops) suggestCommand(ctx context.Context, c pageCall, sid string, args map[string]string, say func(string, map[string]string) (any, error)) (any, error) {
	draft, err := o.suggest(ctx, c, sid)
	if err != nil {
		var be *wire.Error
		if errors.As(err, &be) {
			switch be.Reason {
			case reasonAIOff:
				return say("cmd.suggest.off", nil)
			case reasonAIBudget:
				return say("cmd.suggest.budget", nil)
			case reasonAIFailed:
				return say("cmd.suggest.failed", nil)
			}
		}
		return o.sayError(c.Settings, err)
	}
	return wire.CommandReply{Returns: []wire.Return{{Text: text(o.catalog, c.Settings, "cmd.suggest.head", args) + "\n" + draft}}}, nil
}

// Suggestion is the result of POST /suggest: the AI's draft, which the
// console puts in its reply box.
type Suggestion struct {
	Text string `json:"text"`
}

// suggest writes the AI's draft of the operator's next reply to chat sid:
// the one path of `!ho suggest N` and the console's POST /suggest. It is
// refused with reasonAIOff, reasonAIBudget or reasonAIFailed; a missing
// chat or a storage failure is the operations' usual error.
func (o *ops) suggest(ctx context.Context, c pageCall, sid string) (string, error) {
	if !c.Settings.AIAssist {
		return "", wire.WithReason(wire.ErrConflict, reasonAIOff, "AI help is off for this installation (ai_assist)")
	}
	rec, err := o.mustRecord(ctx, c.Scope, sid)
	if err != nil {
		return "", err
	}
	draft, err := o.assist.ask(ctx, c.Scope, c.Binding, c.Settings, sid, rec, assistSuggest)
	switch {
	case errors.Is(err, errAssistBudget):
		return "", wire.WithReason(wire.ErrRateLimited, reasonAIBudget, "today's AI calls of this installation are used up (ai_calls_per_day)")
	case err != nil || draft == "":
		o.log.WarnContext(ctx, "no AI suggestion", "scope", c.Scope.String(), "sid", sid, "err", err)
		return "", wire.WithReason(wire.ErrUnavailable, reasonAIFailed, "the AI did not draft a reply")
	}
	return draft, nil
}

// withAISummary adds the AI summary to an alert's text on its first
// delivery (a retry resends without a second call: the host drops the
// chats already served by their keys, and the budget is not spent
// twice). Notes of a taken chat get none.
func (n *notices) withAISummary(ctx context.Context, f *bus.Fired, b binding.Binding, set model.Settings, job alertJob, alert string) string {
	if job.Taken || f.Delivered > 1 || !set.AIAssist {
		return alert
	}
	s := n.assist.alertSummary(ctx, f.Scope, b, set, job.SID)
	if s == "" {
		return alert
	}
	return alert + "\n" + text(n.catalog, set, "alert.summary", map[string]string{"summary": s})
}
