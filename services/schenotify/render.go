package schenotify

import (
	"strconv"
	"strings"
	"time"

	"github.com/langbot-nats/plugins/pkg/i18n"
	"github.com/langbot-nats/plugins/pkg/plugin"
	"github.com/langbot-nats/plugins/pkg/settings"
	"github.com/langbot-nats/plugins/services/schenotify/when"
)

// warning is one entry of a tool result's warnings.
type warning struct {
	Code string `json:"code"`
	Text string `json:"text"`
}

// timeResult is the result of get_current_time_str.
type timeResult struct {
	Status   string    `json:"status"`
	Now      string    `json:"now"`
	Zone     string    `json:"zone"`
	Offset   string    `json:"offset"`
	Weekday  string    `json:"weekday"`
	Local    string    `json:"local"`
	Warnings []warning `json:"warnings"`
	Text     string    `json:"text"`
}

// scheduleResult is the success result of schedule_notify.
type scheduleResult struct {
	Status         string           `json:"status"`
	ID             string           `json:"id"`
	Due            string           `json:"due"`
	DueUTC         string           `json:"due_utc"`
	Zone           string           `json:"zone"`
	Recurrence     *when.Recurrence `json:"recurrence"`
	Until          *string          `json:"until"`
	Next           []string         `json:"next"`
	Message        string           `json:"message"`
	Truncated      bool             `json:"truncated"`
	OriginalLength int              `json:"original_length"`
	Adjusted       *when.Adjusted   `json:"adjusted"`
	// Kind is "ai" for an AI-written reminder (Message is its prompt).
	Kind     string    `json:"kind,omitempty"`
	Warnings []warning `json:"warnings"`
	Text     string    `json:"text"`
}

// listItem is one reminder of list_notifications.
type listItem struct {
	ID         string           `json:"id"`
	Due        string           `json:"due"`
	Recurrence *when.Recurrence `json:"recurrence"`
	State      string           `json:"state"`
	Attempt    int              `json:"attempt"`
	LastError  *string          `json:"last_error"`
	Message    string           `json:"message"`
	MessageCut bool             `json:"message_cut"`
	// Held: paused by a user (resume_notification), not by the installation.
	Held bool `json:"held"`
	// Pause is why a reminder neither held nor of a detached installation
	// is paused: "calendar_end", its working calendar ends before its next
	// occurrence (it resumes by itself with a newer calendar).
	Pause    string   `json:"pause,omitempty"`
	Mentions []string `json:"mentions"`
	// Kind is "ai" for an AI-written reminder (Message is its prompt).
	Kind string `json:"kind,omitempty"`
}

// listResult is the result of list_notifications.
type listResult struct {
	Status    string     `json:"status"`
	Zone      string     `json:"zone"`
	Count     int        `json:"count"`
	Reminders []listItem `json:"reminders"`
	Warnings  []warning  `json:"warnings"`
	Text      string     `json:"text"`
}

// cancelResult is the success result of cancel_notification.
type cancelResult struct {
	Status   string    `json:"status"`
	ID       string    `json:"id"`
	Due      string    `json:"due"`
	Message  string    `json:"message"`
	InFlight bool      `json:"in_flight"`
	Warnings []warning `json:"warnings"`
	Text     string    `json:"text"`
}

// errorResult is any tool's error result.
type errorResult struct {
	Status   string    `json:"status"`
	Code     string    `json:"code"`
	Field    string    `json:"field,omitempty"`
	Warnings []warning `json:"warnings"`
	Text     string    `json:"text"`
}

// Renderer turns outcomes into tool results and command replies in the
// language of the settings.
type Renderer struct {
	Cat *i18n.Catalog
}

// text renders key in the settings' language, naming commands with the
// settings' command prefix (i18n.PrefixArg).
func (rd Renderer) text(s Settings, key string, args map[string]string) string {
	return rd.Cat.PrefixedText(s.Language, key, plugin.CommandPrefix("", s.CommandPrefix), args)
}

// Warnings renders the settings' config warnings.
func (rd Renderer) Warnings(s Settings) []warning {
	out := []warning{}
	for _, w := range s.Warnings {
		out = append(out, warning{Code: "bad_config", Text: rd.text(s, "warn.bad_config",
			map[string]string{"field": w.Field, "value": w.Value, "used": w.Used})})
	}
	return out
}

// Reply is a command reply: the prefix, the body, then one line per
// config warning.
func (rd Renderer) Reply(s Settings, body string) string {
	var b strings.Builder
	b.WriteString(s.Prefix)
	b.WriteString(body)
	for _, w := range rd.Warnings(s) {
		b.WriteString("\n")
		b.WriteString(w.Text)
	}
	return b.String()
}

// failureText is the localized text of a validation failure.
func (rd Renderer) failureText(s Settings, f *when.Failure) string {
	return rd.text(s, "err."+f.Code, f.Args)
}

// ToolError is the error result of a failure.
func (rd Renderer) ToolError(s Settings, f *when.Failure) errorResult {
	return errorResult{Status: "error", Code: f.Code, Field: f.Field, Warnings: rd.Warnings(s), Text: rd.failureText(s, f)}
}

// Now is the result of get_current_time_str.
func (rd Renderer) Now(s Settings, now time.Time) timeResult {
	now = now.Truncate(time.Second)
	local := now.In(s.Zone)
	return timeResult{
		Status:   "ok",
		Now:      when.RFC3339In(now, s.Zone),
		Zone:     s.Zone.String(),
		Offset:   when.Offset(s.Zone, now),
		Weekday:  local.Weekday().String(),
		Local:    when.Local(now, s.Zone),
		Warnings: rd.Warnings(s),
		Text: rd.text(s, "time.now", map[string]string{"time": when.Local(now, s.Zone),
			"zone": when.ZoneLabel(s.Zone, now), "weekday": weekday(rd.Cat, s.Language, local.Weekday())}),
	}
}

// scheduled is the text of a created reminder (ok.* plus notes), shared by
// the tool and !sche add.
func (rd Renderer) scheduled(s Settings, id string, p when.Plan, now time.Time) string {
	zone := when.ZoneLabel(s.Zone, now)
	args := map[string]string{"id": id, "time": when.Local(p.First, s.Zone), "zone": zone, "message": preview(p.Message, listPreviewRunes)}
	var parts []string
	if p.Rule == nil {
		parts = append(parts, rd.text(s, "ok.scheduled", args))
	} else {
		var next []string
		for _, t := range p.Next[min(1, len(p.Next)):] {
			next = append(next, when.Local(t, s.Zone))
		}
		args["next"] = strings.Join(next, ", ")
		if len(next) == 0 {
			args["next"] = rd.text(s, "word.none", nil)
		}
		args["recurrence"] = p.Rule.Display()
		args["until"] = rd.text(s, "word.no_end", nil)
		if !p.Until.IsZero() {
			args["until"] = when.Local(p.Until, s.Zone)
		}
		parts = append(parts, rd.text(s, "ok.scheduled_recurring", args))
	}
	if p.Understood != "" {
		// What the natural expression was read as, in the chat's zone, with
		// the weekday: the answer to any ambiguity ("next friday", "3点").
		u := map[string]string{"expr": p.Understood, "time": when.Local(p.First, s.Zone), "zone": zone,
			"weekday": weekday(rd.Cat, s.Language, p.First.In(s.Zone).Weekday())}
		if p.Rule != nil {
			u["recurrence"] = p.Rule.Display()
			parts = append(parts, rd.text(s, "note.understood_rule", u))
		} else {
			parts = append(parts, rd.text(s, "note.understood", u))
		}
	}
	if p.Truncated {
		parts = append(parts, rd.text(s, "note.truncated", map[string]string{"max": strconv.Itoa(when.MaxMessageRunes), "length": strconv.Itoa(p.OriginalLength)}))
	}
	if p.Adjusted != nil {
		switch p.Adjusted.Reason {
		case when.AdjustGap:
			parts = append(parts, rd.text(s, "note.dst_gap", map[string]string{"requested": p.Adjusted.Requested, "time": when.Local(p.First, s.Zone)}))
		case when.AdjustOverlap:
			parts = append(parts, rd.text(s, "note.dst_overlap", map[string]string{"time": p.Adjusted.Requested, "zone": zone}))
		}
	}
	return strings.Join(parts, "\n")
}

// ScheduleResult is the success result of schedule_notify.
func (rd Renderer) ScheduleResult(s Settings, id string, p when.Plan, now time.Time) scheduleResult {
	r := scheduleResult{
		Status: "ok", ID: id, Due: when.RFC3339In(p.First, s.Zone), DueUTC: when.UTCString(p.First),
		Zone: s.Zone.String(), Next: []string{}, Message: p.Message, Truncated: p.Truncated,
		OriginalLength: p.OriginalLength, Adjusted: p.Adjusted, Warnings: rd.Warnings(s),
		Text: rd.scheduled(s, id, p, now),
	}
	if p.Rule != nil {
		rec := p.Rule.Recurrence
		r.Recurrence = &rec
		for _, t := range p.Next {
			r.Next = append(r.Next, when.RFC3339In(t, s.Zone))
		}
		if !p.Until.IsZero() {
			u := when.RFC3339In(p.Until, s.Zone)
			r.Until = &u
		}
	}
	return r
}

// shownState maps a record state to what lists show: a reminder being
// sent is still scheduled.
func shownState(st string) string {
	if st == StateSending {
		return StateScheduled
	}
	return st
}

// List is the result of list_notifications over the session's sorted
// records.
func (rd Renderer) List(s Settings, recs []*Record, now time.Time) listResult {
	zone := when.ZoneLabel(s.Zone, now)
	r := listResult{Status: "ok", Zone: s.Zone.String(), Count: len(recs), Reminders: []listItem{}, Warnings: rd.Warnings(s)}
	for _, rec := range recs {
		it := listItem{ID: rec.ID, Due: when.RFC3339In(rec.NextDue, s.Zone), Recurrence: rec.Recurrence,
			State: shownState(rec.State), Attempt: rec.Attempt, Held: rec.Held, Pause: rec.Pause, Mentions: append([]string{}, rec.Mentions...), Kind: rec.Kind}
		if rec.LastError != nil {
			c := rec.LastError.Code
			it.LastError = &c
		}
		it.Message = cutRunes(rec.Message, toolPreviewRunes)
		if it.Message != rec.Message {
			it.Message = strings.TrimSuffix(it.Message, "…")
			it.MessageCut = true
		}
		r.Reminders = append(r.Reminders, it)
	}
	args := map[string]string{"count": strconv.Itoa(len(recs)), "zone": zone}
	if len(recs) == 0 {
		r.Text = rd.text(s, "ok.list_empty", args)
	} else {
		r.Text = rd.text(s, "ok.list", args)
	}
	return r
}

// Cancelled is the success result of cancel_notification.
func (rd Renderer) Cancelled(s Settings, rec *Record, inFlight bool) cancelResult {
	msg := cutRunes(rec.Message, toolPreviewRunes)
	text := rd.text(s, "ok.cancelled", map[string]string{"id": rec.ID, "time": when.Local(rec.NextDue, s.Zone), "message": preview(rec.Message, listPreviewRunes)})
	if inFlight {
		text += "\n" + rd.text(s, "note.in_flight", nil)
	}
	return cancelResult{Status: "ok", ID: rec.ID, Due: when.RFC3339In(rec.NextDue, s.Zone), Message: msg,
		InFlight: inFlight, Warnings: rd.Warnings(s), Text: text}
}

// listPageSize is the number of reminders per !sche page.
const listPageSize = 20

// ListReply renders !sche page over the session's sorted records;
// maxAttempts is the retry cap shown in retrying markers (0: none).
func (rd Renderer) ListReply(s Settings, recs []*Record, page int, maxAttempts int, now time.Time) string {
	return rd.Reply(s, rd.listBody(s, recs, page, maxAttempts, now))
}

// listBody is ListReply without the prefix and warnings.
func (rd Renderer) listBody(s Settings, recs []*Record, page int, maxAttempts int, now time.Time) string {
	zone := when.ZoneLabel(s.Zone, now)
	if len(recs) == 0 {
		return rd.text(s, "cmd.list_empty", map[string]string{"zone": zone})
	}
	pages := (len(recs) + listPageSize - 1) / listPageSize
	page = max(1, min(page, pages))
	lines := []string{rd.text(s, "cmd.list_header", map[string]string{"count": strconv.Itoa(len(recs)), "zone": zone})}
	start := (page - 1) * listPageSize
	for i := start; i < min(start+listPageSize, len(recs)); i++ {
		lines = append(lines, rd.listLine(s, i+1, recs[i], maxAttempts))
	}
	if pages > 1 {
		lines = append(lines, rd.text(s, "cmd.list_footer", map[string]string{"page": strconv.Itoa(page), "pages": strconv.Itoa(pages)}))
	}
	return strings.Join(lines, "\n")
}

func (rd Renderer) listLine(s Settings, n int, rec *Record, maxAttempts int) string {
	t := when.Local(rec.NextDue, s.Zone)
	if rec.Zone != "" && rec.Zone != s.Zone.String() {
		t += rd.text(s, "cmd.list_zone", map[string]string{"zone": rec.Zone})
	}
	rec2 := ""
	if rec.Recurrence != nil {
		rec2 = rd.text(s, "cmd.list_recurrence", map[string]string{"recurrence": rec.Recurrence.Display()})
	}
	state := ""
	switch rec.State {
	case StateRetrying:
		mx := rd.text(s, "word.unlimited", nil)
		if maxAttempts > 0 {
			mx = strconv.Itoa(maxAttempts)
		}
		state = rd.text(s, "cmd.state_retrying", map[string]string{"attempt": strconv.Itoa(rec.Attempt), "max": mx})
	case StatePaused:
		state = rd.text(s, "cmd.state_paused", nil)
		switch {
		case rec.Held:
			state = rd.text(s, "cmd.state_held", map[string]string{"id": rec.ID})
		case rec.Pause == pauseCalendarEnd:
			state = rd.text(s, "cmd.state_calendar", nil)
		}
	case StateWaiting:
		state = rd.text(s, "cmd.state_waiting", nil)
	case StateFailed:
		code := ErrCodeHost
		if rec.LastError != nil {
			code = rec.LastError.Code
		}
		state = rd.text(s, "cmd.state_failed", map[string]string{"error": code})
	}
	return rd.text(s, "cmd.list_line", map[string]string{"n": strconv.Itoa(n), "id": rec.ID, "time": t,
		"recurrence": rec2, "state": state, "message": rd.kindMark(s, rec) + preview(rec.Message, listPreviewRunes)})
}

// Deleted is the !dsche success reply body (without prefix).
func (rd Renderer) Deleted(s Settings, rec *Record, inFlight bool) string {
	t := rd.text(s, "cmd.deleted", map[string]string{"id": rec.ID, "time": when.Local(rec.NextDue, s.Zone), "message": preview(rec.Message, listPreviewRunes)})
	if inFlight {
		t += "\n" + rd.text(s, "note.in_flight", nil)
	}
	return t
}

// DeliveryText is the delivered text: prefix + message, plus the late note
// in the authority's language when the occurrence is more than 60 s late.
func (rd Renderer) DeliveryText(s Settings, rec *Record, occurrence, now time.Time, skipped int) string {
	text := s.Prefix + rec.Message
	late := now.Sub(occurrence)
	if late <= lateThreshold {
		return text
	}
	zone := s.Zone
	if loc, err := settings.LoadZone(rec.Zone); err == nil && rec.Recurrence != nil {
		zone = loc
	}
	args := map[string]string{"time": when.Local(occurrence, zone), "late": coarseDuration(rd.Cat, s.Language, late), "skipped": strconv.Itoa(skipped)}
	key := "deliver.late_single"
	if skipped > 0 {
		key = "deliver.late"
	}
	return text + "\n" + rd.text(s, key, args)
}

// calendarNote is the line a working-day reminder's last delivery inside
// its calendar ends with (year, the calendar's last), or "" (year 0).
func (rd Renderer) calendarNote(s Settings, year int) string {
	if year == 0 {
		return ""
	}
	return "\n" + rd.text(s, "deliver.calendar_end", map[string]string{"year": strconv.Itoa(year)})
}

// lateThreshold is the lateness above which a delivery carries the late
// note.
const lateThreshold = 60 * time.Second

// changeResult is the success result of the change tools (snooze, edit,
// pause, resume).
type changeResult struct {
	Status     string           `json:"status"`
	ID         string           `json:"id"`
	Due        string           `json:"due"`
	DueUTC     string           `json:"due_utc"`
	State      string           `json:"state"`
	Held       bool             `json:"held"`
	Recurrence *when.Recurrence `json:"recurrence"`
	Message    string           `json:"message"`
	Warnings   []warning        `json:"warnings"`
	Text       string           `json:"text"`
}

// changed is the text of a change (without prefix), shared by the
// commands and the tools.
func (rd Renderer) changed(s Settings, c changeOutcome, now time.Time) string {
	r := c.rec
	zone := when.ZoneLabel(s.Zone, now)
	args := map[string]string{"id": r.ID, "time": when.Local(r.NextDue, s.Zone), "zone": zone, "message": preview(r.Message, listPreviewRunes)}
	if r.Recurrence != nil {
		args["recurrence"] = r.Recurrence.Display()
	}
	key := map[string]string{changedTime: "ok.edited_time", changedRule: "ok.edited_rule", changedText: "ok.edited_text",
		changedPaused: "ok.paused", changedResume: "ok.resumed", changedSnooze: "ok.snoozed"}[c.kind]
	parts := []string{rd.text(s, key, args)}
	if c.plan.Understood != "" {
		u := map[string]string{"expr": c.plan.Understood, "time": when.Local(r.NextDue, s.Zone), "zone": zone,
			"weekday": weekday(rd.Cat, s.Language, r.NextDue.In(s.Zone).Weekday()), "recurrence": args["recurrence"]}
		k := "note.understood"
		if c.kind == changedRule {
			k = "note.understood_rule"
		}
		parts = append(parts, rd.text(s, k, u))
	}
	if c.plan.Adjusted != nil && c.plan.Adjusted.Reason == when.AdjustGap {
		parts = append(parts, rd.text(s, "note.dst_gap", map[string]string{"requested": c.plan.Adjusted.Requested, "time": when.Local(r.NextDue, s.Zone)}))
	}
	if c.plan.Adjusted != nil && c.plan.Adjusted.Reason == when.AdjustOverlap {
		parts = append(parts, rd.text(s, "note.dst_overlap", map[string]string{"time": c.plan.Adjusted.Requested, "zone": zone}))
	}
	return strings.Join(parts, "\n")
}

// changeResult is the tool result of a change.
func (rd Renderer) changeResult(s Settings, c changeOutcome, now time.Time) changeResult {
	r := c.rec
	return changeResult{Status: "ok", ID: r.ID, Due: when.RFC3339In(r.NextDue, s.Zone), DueUTC: when.UTCString(r.NextDue),
		State: shownState(r.State), Held: r.Held, Recurrence: r.Recurrence, Message: cutRunes(r.Message, toolPreviewRunes),
		Warnings: rd.Warnings(s), Text: rd.changed(s, c, now)}
}
