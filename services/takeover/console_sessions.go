package takeover

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover/model"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

// infoView is the result of GET /info.
type infoView struct {
	Scope    string `json:"scope"`
	Operator string `json:"operator"`
	Now      int64  `json:"now"`
	Config   struct {
		TakeoverTimeout int  `json:"takeover_timeout"`
		TakeoverOnReply bool `json:"takeover_on_reply"`
		HistoryLimit    int  `json:"history_limit"`
		// AIAssist: the console offers the AI's suggested reply
		// (POST /suggest).
		AIAssist bool `json:"ai_assist"`
	} `json:"config"`
	Limits struct {
		AttachmentBytes int `json:"attachment_bytes"`
	} `json:"limits"`
}

func (o *ops) info(c pageCall) infoView {
	var i infoView
	i.Scope, i.Operator, i.Now = c.Scope.String(), c.Operator, o.now.ms()
	i.Config.TakeoverTimeout, i.Config.TakeoverOnReply, i.Config.HistoryLimit = c.Settings.TakeoverTimeout, c.Settings.TakeoverOnReply, c.Settings.HistoryLimit
	i.Config.AIAssist = c.Settings.AIAssist
	i.Limits.AttachmentBytes = o.attachmentLimit()
	return i
}

// SessionList is the result of GET /sessions.
type SessionList struct {
	Sessions   []Summary `json:"sessions"`
	NextCursor string    `json:"next_cursor"`
}

func (o *ops) listSessions(ctx context.Context, c pageCall, req PageRequest) (SessionList, error) {
	stored, err := o.st.ListRecords(ctx, c.Scope)
	if err != nil {
		return SessionList{}, err
	}
	all := make([]Summary, 0, len(stored))
	q := strings.ToLower(req.Query)
	for _, l := range stored {
		sid, rec := l.SID, l.Rec
		if rec == nil {
			all = append(all, Summary{SID: sid, Error: reasonUnreadable})
			continue
		}
		if req.Type != typeAll && rec.Type != req.Type {
			continue
		}
		sum := o.notices.summaryWith(sid, rec, c.Settings, o.notices.botName(c.Scope, c.Binding, rec.BotUUID))
		if q != "" && !strings.Contains(strings.ToLower(sum.Name), q) && !strings.Contains(strings.ToLower(sum.TargetID), q) &&
			!strings.Contains(strings.ToLower(sum.BotName), q) {
			continue
		}
		all = append(all, sum)
	}
	slices.SortFunc(all, func(a, b Summary) int {
		if c := cmp.Compare(b.LastMsgAt, a.LastMsgAt); c != 0 {
			return c
		}
		return cmp.Compare(a.SID, b.SID)
	})
	start := 0
	if req.Cursor != "" {
		at, sid, ok := parseCursor(req.Cursor)
		if !ok {
			return SessionList{}, wire.Errorf(wire.ErrBadRequest, "cursor is malformed")
		}
		start = len(all)
		for i, sum := range all {
			if sum.LastMsgAt < at || (sum.LastMsgAt == at && sum.SID > sid) {
				start = i
				break
			}
		}
	}
	end := min(start+req.Limit, len(all))
	out := SessionList{Sessions: all[start:end]}
	if end < len(all) && end > start {
		last := all[end-1]
		out.NextCursor = strconv.FormatInt(last.LastMsgAt, 10) + "_" + last.SID
	}
	return out, nil
}

func parseCursor(c string) (int64, string, bool) {
	at, sid, ok := strings.Cut(c, "_")
	if !ok {
		return 0, "", false
	}
	n, err := strconv.ParseInt(at, 10, 64)
	return n, sid, err == nil && model.ValidSID(sid)
}

// sessionDetail is a Summary with the gen and the members (spec §7.3).
type sessionDetail struct {
	Summary
	Gen     string       `json:"gen"`
	Members []memberView `json:"members"`
	// RelayedTo is the operator chats relaying the chat now (relay.go),
	// which the console shows as `!ho show N` does.
	RelayedTo []RelayPlace `json:"relayed_to,omitempty"`
}

// memberView is a member in the console.
type memberView struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

func members(rec *model.Record) []memberView {
	out := make([]memberView, 0, len(rec.Members))
	for _, m := range rec.Members {
		out = append(out, memberView{ID: m.ID, Name: m.Name})
	}
	return out
}

// MessagePage is the result of GET /messages.
type MessagePage struct {
	Session    sessionDetail `json:"session"`
	Messages   []model.Entry `json:"messages"`
	NextBefore uint64        `json:"next_before"`
}

func (o *ops) messages(ctx context.Context, c pageCall, req PageRequest) (MessagePage, error) {
	rec, err := o.mustRecord(ctx, c.Scope, req.SID)
	if err != nil {
		return MessagePage{}, err
	}
	entries, _, err := o.st.ReadHistory(ctx, c.Scope, req.SID)
	if err != nil {
		return MessagePage{}, err
	}
	vis := visible(entries, rec.Gen, c.Settings.HistoryLimit, o.recordBudget)
	out := MessagePage{Session: sessionDetail{
		Summary: o.notices.summaryWith(req.SID, rec, c.Settings, o.notices.botName(c.Scope, c.Binding, rec.BotUUID)),
		Gen:     rec.Gen, Members: members(rec),
	}, Messages: []model.Entry{}}
	if req.Before == 0 { // the first page: the console shows the chat's state from it
		for _, t := range o.relayedTo(ctx, c.Scope, c.Settings, req.SID) {
			out.Session.RelayedTo = append(out.Session.RelayedTo, t.place())
		}
	}
	// newest first, older than the entry before names; by place, not by
	// sequence, since a late entry's place is not its sequence's
	end := len(vis)
	if req.Before != 0 {
		end = placeOf(vis, req.Before)
	}
	for i := end - 1; i >= 0 && len(out.Messages) < req.Limit; i-- {
		out.Messages = append(out.Messages, vis[i])
	}
	if n := len(out.Messages); n > 0 && n == req.Limit && end > n {
		out.NextBefore = out.Messages[n-1].Seq
	}
	return out, nil
}

// placeOf returns the index of the entry of sequence seq in vis; for one
// no longer there (trimmed), that of the first entry stored after it.
func placeOf(vis []model.Entry, seq uint64) int {
	first := len(vis)
	for i, e := range vis {
		if e.Seq == seq {
			return i
		}
		if e.Seq > seq && i < first {
			first = i
		}
	}
	return first
}

// visible returns the entries the console may see (spec §5.3 rule 5): the
// record's gen only, in send order (store.InSendOrder, with the recording
// budget), the newest limit of them, oldest first.
func visible(entries []store.StoredEntry, gen string, limit int, budget time.Duration) []model.Entry {
	kept := make([]store.StoredEntry, 0, len(entries))
	for _, e := range entries {
		if !e.Corrupt && e.Gen == gen {
			kept = append(kept, e)
		}
	}
	kept = store.InSendOrder(kept, budget)
	if len(kept) > limit {
		kept = kept[len(kept)-limit:]
	}
	out := make([]model.Entry, len(kept))
	for i, e := range kept {
		out[i] = e.Entry
	}
	return out
}
