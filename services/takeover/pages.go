package takeover

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/services/takeover/model"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

// ConsolePageID is the page id of the console (spec §7.1).
const ConsolePageID = "console"

// actionTimeout bounds a console action, which its caller cannot cancel
// (the invocation timeout).
const actionTimeout = 30 * time.Second

// maxExportInline bounds the inline blobs of an export (spec §11).
const maxExportInline = 64 << 20

// PageCall is who and what a console operation runs for: the scope, the
// binding host actions use, the installation's settings, the operator, and
// whether the authority is inactive (reads only). The NATS page endpoint
// fills it from the invocation; an HTTP console fills it from its token
// and the scope's authority.
type PageCall struct {
	Scope    binding.Scope
	Binding  binding.Binding
	Settings model.Settings
	Operator string
	Inactive bool
}

// Do runs one console operation (spec §7.2) and returns its result. The
// error is a *bus.Error, store.ErrCorrupt for an unreadable record, or a storage
// error (wireError maps the last two).
func (s *Service) Do(ctx context.Context, c PageCall, req PageRequest) (any, error) {
	if c.Inactive && req.Op.IsAction() {
		return nil, bus.WithReason(bus.ErrBindingRefused, ReasonInstallationInactive, "the installation is disabled or superseded")
	}
	if req.Op.IsAction() {
		// An action runs to its end once started: a caller that goes away
		// (an abandoned HTTP request) must not cut it between its writes,
		// which would leave e.g. an active takeover without its expiry, or
		// a purged record with its history and blobs (spec §12 ST-10).
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), actionTimeout)
		defer cancel()
	}
	switch req.Op {
	case OpInfo:
		return s.info(c), nil
	case OpSessions:
		return s.listSessions(ctx, c, req)
	case OpMessages:
		return s.messages(ctx, c, req)
	case OpTakeoverStatus:
		rec, err := s.mustRecord(ctx, c.Scope, req.SID)
		if err != nil {
			return nil, err
		}
		return s.takeoverView(rec, c.Settings), nil
	case OpTakeover:
		return s.consoleTakeover(ctx, c, req.SID)
	case OpRelease:
		return s.consoleRelease(ctx, c, req.SID)
	case OpMarkHandled:
		return s.markHandled(ctx, c, req.SID)
	case OpReply:
		return s.reply(ctx, c, req.SID, req.Reply)
	case OpUserInfo:
		return s.userInfo(ctx, c, req)
	case OpGroupInfo:
		return s.groupInfo(ctx, c, req.SID)
	case OpBlob:
		return s.blob(ctx, c, req)
	case OpExport:
		return s.export(ctx, c, req)
	case OpDeleteSession:
		return s.deleteSession(ctx, c, req.SID)
	case OpClear:
		return s.clear(ctx, c)
	}
	return nil, bus.Errorf(bus.ErrNotFound, "unknown console operation")
}

// dedupePage: page actions run under the invocation dedupe record; reads
// skip it (spec §7.1 rule 5).
func dedupePage(inv *bus.Invocation) bool {
	if inv.Page == nil {
		return false
	}
	op, err := ParseOp(inv.Page.Method, inv.Page.Endpoint)
	return err == nil && op.IsAction()
}

// pageRead: reads are served under a disabled or superseded authority.
func pageRead(inv *bus.Invocation) bool {
	if inv.Page == nil {
		return false
	}
	op, err := ParseOp(inv.Page.Method, inv.Page.Endpoint)
	return err == nil && !op.IsAction()
}

// handlePage is the NATS page endpoint over Do.
func (s *Service) handlePage(ctx context.Context, inv *bus.Invocation) (any, error) {
	p := inv.Page
	if p.PageID != ConsolePageID {
		return nil, bus.Errorf(bus.ErrNotFound, "unknown page")
	}
	req, err := ParsePageRequest(p.Method, p.Endpoint, p.Body)
	if err != nil {
		return nil, wireError(err)
	}
	var caller struct {
		Operator string `json:"operator"`
	}
	if len(p.Caller) > 0 {
		_ = json.Unmarshal(p.Caller, &caller)
	}
	c := PageCall{
		Scope: inv.Scope, Binding: inv.Binding,
		Settings: s.settingsFor(inv.Scope, inv.Binding, inv.Config),
		Operator: OperatorOf(caller.Operator),
		Inactive: inv.Authority.State != bus.StateActive,
	}
	data, err := s.Do(ctx, c, req)
	if err != nil {
		if req.Op.IsAction() {
			s.audit(ctx, c, req, "error")
		}
		return nil, wireError(err)
	}
	if req.Op.IsAction() {
		s.audit(ctx, c, req, "ok")
	}
	return bus.PageReply{Data: data}, nil
}

// audit logs one line per action: never text, names or file names.
func (s *Service) audit(ctx context.Context, c PageCall, req PageRequest, outcome string) {
	s.log.InfoContext(ctx, "console action", "action", string(req.Op), "scope", c.Scope.String(), "sid", req.SID, "operator", c.Operator, "outcome", outcome)
}

// wireError maps an operation error to the wire error (DESIGN §3.1): a
// *bus.Error as it is, anything else by what went wrong.
func wireError(err error) error {
	var be *bus.Error
	if errors.As(err, &be) {
		return be
	}
	if errors.Is(err, store.ErrCorrupt) {
		return bus.WithReason(bus.ErrInternal, ReasonUnreadable, "the session's stored record is unreadable")
	}
	if errors.Is(err, context.Canceled) {
		return bus.Errorf(bus.ErrUnavailable, "the request was cancelled")
	}
	return bus.Errorf(bus.ErrUnavailable, "storage is unavailable, retry later")
}

// Info is the result of GET /info.
type Info struct {
	Scope    string `json:"scope"`
	Operator string `json:"operator"`
	Now      int64  `json:"now"`
	Config   struct {
		TakeoverTimeout int  `json:"takeover_timeout"`
		TakeoverOnReply bool `json:"takeover_on_reply"`
		HistoryLimit    int  `json:"history_limit"`
	} `json:"config"`
	Limits struct {
		AttachmentBytes int `json:"attachment_bytes"`
	} `json:"limits"`
}

func (s *Service) info(c PageCall) Info {
	var i Info
	i.Scope, i.Operator, i.Now = c.Scope.String(), c.Operator, s.nowMS()
	i.Config.TakeoverTimeout, i.Config.TakeoverOnReply, i.Config.HistoryLimit = c.Settings.TakeoverTimeout, c.Settings.TakeoverOnReply, c.Settings.HistoryLimit
	i.Limits.AttachmentBytes = s.attachmentLimit()
	return i
}

// attachmentLimit is 10 MiB, lowered when the server's max_payload cannot
// carry it (spec §11).
func (s *Service) attachmentLimit() int {
	mp := int(s.nc.MaxPayload())
	if mp > 0 && (mp-256<<10)*3/8 < model.MaxAttachmentBytes {
		return max((mp-256<<10)*3/8, 0)
	}
	return model.MaxAttachmentBytes
}

// mustRecord reads a record that must exist.
func (s *Service) mustRecord(ctx context.Context, sc binding.Scope, sid string) (*model.Record, error) {
	rec, _, err := s.st.GetRecord(ctx, sc, sid)
	if err != nil {
		return nil, err
	}
	if rec == nil {
		return nil, bus.Errorf(bus.ErrNotFound, "no such session")
	}
	return rec, nil
}

func legacyErr() error {
	return bus.WithReason(bus.ErrConflict, ReasonLegacyReadOnly, "a legacy session is read-only")
}

// Summary is a session in the list (spec §7.3).
type Summary struct {
	SID           string        `json:"sid"`
	SessionKey    string        `json:"session_key"`
	Type          string        `json:"type"`
	TargetID      string        `json:"target_id"`
	Name          string        `json:"name"`
	BotUUID       string        `json:"bot_uuid"`
	BotName       string        `json:"bot_name"`
	Adapter       string        `json:"adapter"`
	Legacy        bool          `json:"legacy"`
	MemberCount   int           `json:"member_count"`
	LastMsgAt     int64         `json:"last_msg_at"`
	LastPreview   model.Preview `json:"last_msg_preview"`
	Unread        bool          `json:"unread"`
	TriggeredWord string        `json:"triggered_word"`
	Takeover      *TakeoverView `json:"takeover,omitempty"`
	Error         string        `json:"error,omitempty"`
}

// summary builds a Summary; bot names come from the cache without waiting.
func (s *Service) summary(ctx context.Context, sc binding.Scope, b binding.Binding, sid string, rec *model.Record) Summary {
	return s.summaryWith(sid, rec, model.Settings{TakeoverTimeout: model.DefaultTakeoverTimeout}, s.botName(sc, b, rec.BotUUID))
}

func (s *Service) botName(sc binding.Scope, b binding.Binding, bot string) string {
	if bot == "" {
		return ""
	}
	return s.bots.lookup(sc, b, bot).name
}

func (s *Service) summaryWith(sid string, rec *model.Record, set model.Settings, botName string) Summary {
	tv := s.takeoverView(rec, set)
	return Summary{
		SID: sid, SessionKey: rec.SessionKey, Type: rec.Type, TargetID: rec.TargetID, Name: rec.Name,
		BotUUID: rec.BotUUID, BotName: botName, Adapter: rec.Adapter, Legacy: model.IsLegacy(rec),
		MemberCount: len(rec.Members), LastMsgAt: rec.LastMsgAt, LastPreview: rec.LastPreview,
		Unread: rec.Unread, TriggeredWord: rec.TriggeredWord, Takeover: &tv,
	}
}

// SessionList is the result of GET /sessions.
type SessionList struct {
	Sessions   []Summary `json:"sessions"`
	NextCursor string    `json:"next_cursor"`
}

func (s *Service) listSessions(ctx context.Context, c PageCall, req PageRequest) (SessionList, error) {
	stored, err := s.st.ListRecords(ctx, c.Scope)
	if err != nil {
		return SessionList{}, err
	}
	all := make([]Summary, 0, len(stored))
	q := strings.ToLower(req.Query)
	for _, l := range stored {
		sid, rec := l.SID, l.Rec
		if rec == nil {
			all = append(all, Summary{SID: sid, Error: ReasonUnreadable})
			continue
		}
		if req.Type != TypeAll && rec.Type != req.Type {
			continue
		}
		sum := s.summaryWith(sid, rec, c.Settings, s.botName(c.Scope, c.Binding, rec.BotUUID))
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
			return SessionList{}, bus.Errorf(bus.ErrBadRequest, "cursor is malformed")
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

// Detail is a Summary with the gen and the members (spec §7.3).
type Detail struct {
	Summary
	Gen     string       `json:"gen"`
	Members []MemberView `json:"members"`
}

// MemberView is a member in the console.
type MemberView struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

func members(rec *model.Record) []MemberView {
	out := make([]MemberView, 0, len(rec.Members))
	for _, m := range rec.Members {
		out = append(out, MemberView{ID: m.ID, Name: m.Name})
	}
	return out
}

// MessagePage is the result of GET /messages.
type MessagePage struct {
	Session    Detail        `json:"session"`
	Messages   []model.Entry `json:"messages"`
	NextBefore uint64        `json:"next_before"`
}

func (s *Service) messages(ctx context.Context, c PageCall, req PageRequest) (MessagePage, error) {
	rec, err := s.mustRecord(ctx, c.Scope, req.SID)
	if err != nil {
		return MessagePage{}, err
	}
	entries, _, err := s.st.ReadHistory(ctx, c.Scope, req.SID)
	if err != nil {
		return MessagePage{}, err
	}
	vis := visible(entries, rec.Gen, c.Settings.HistoryLimit)
	out := MessagePage{Session: Detail{
		Summary: s.summaryWith(req.SID, rec, c.Settings, s.botName(c.Scope, c.Binding, rec.BotUUID)),
		Gen:     rec.Gen, Members: members(rec),
	}, Messages: []model.Entry{}}
	// newest first, below before
	for i := len(vis) - 1; i >= 0 && len(out.Messages) < req.Limit; i-- {
		if req.Before != 0 && vis[i].Seq >= req.Before {
			continue
		}
		out.Messages = append(out.Messages, vis[i])
	}
	if n := len(out.Messages); n > 0 && n == req.Limit && vis[0].Seq < out.Messages[n-1].Seq {
		out.NextBefore = out.Messages[n-1].Seq
	}
	return out, nil
}

func (s *Service) consoleTakeover(ctx context.Context, c PageCall, sid string) (TakeoverView, error) {
	rec, err := s.mustRecord(ctx, c.Scope, sid)
	if err != nil {
		return TakeoverView{}, err
	}
	if model.IsLegacy(rec) {
		return TakeoverView{}, legacyErr()
	}
	now := s.nowMS()
	var tr model.Transition
	rec, rev, err := s.st.UpdateRecord(ctx, c.Scope, sid, func(cur *model.Record) (*model.Record, error) {
		if cur == nil {
			return nil, bus.Errorf(bus.ErrNotFound, "no such session")
		}
		if model.IsLegacy(cur) {
			return nil, legacyErr()
		}
		r := cur.Clone()
		tr = r.Takeover.TakeOver(now, c.Settings.TimeoutMillis(), model.ViaConsole, c.Operator)
		r.UpdatedAt = now
		return r, nil
	})
	if err != nil {
		return TakeoverView{}, err
	}
	s.view.ApplyRecord(c.Scope, sid, rec, rev)
	s.afterTakeover(ctx, c.Scope, c.Binding, c.Settings, sid, rec, tr)
	return s.takeoverView(rec, c.Settings), nil
}

func (s *Service) consoleRelease(ctx context.Context, c PageCall, sid string) (TakeoverView, error) {
	rec, err := s.mustRecord(ctx, c.Scope, sid)
	if err != nil {
		return TakeoverView{}, err
	}
	if model.IsLegacy(rec) {
		return TakeoverView{}, legacyErr()
	}
	now := s.nowMS()
	released := false
	rec, rev, err := s.st.UpdateRecord(ctx, c.Scope, sid, func(cur *model.Record) (*model.Record, error) {
		released = false
		if cur == nil {
			return nil, bus.Errorf(bus.ErrNotFound, "no such session")
		}
		r := cur.Clone()
		if r.Takeover.Release(now, c.Operator, model.ReasonManual) == model.Unchanged {
			return nil, store.ErrNoChange
		}
		released = true
		r.UpdatedAt = now
		return r, nil
	})
	if err != nil {
		return TakeoverView{}, err
	}
	if released {
		s.view.ApplyRecord(c.Scope, sid, rec, rev)
		s.afterRelease(ctx, c.Scope, c.Binding, c.Settings, sid, rec, true)
	}
	return s.takeoverView(rec, c.Settings), nil
}

func (s *Service) markHandled(ctx context.Context, c PageCall, sid string) (Summary, error) {
	rec, err := s.mustRecord(ctx, c.Scope, sid)
	if err != nil {
		return Summary{}, err
	}
	if model.IsLegacy(rec) {
		return Summary{}, legacyErr()
	}
	rec, rev, err := s.st.UpdateRecord(ctx, c.Scope, sid, func(cur *model.Record) (*model.Record, error) {
		if cur == nil {
			return nil, bus.Errorf(bus.ErrNotFound, "no such session")
		}
		if !cur.Unread && cur.TriggeredWord == "" {
			return nil, store.ErrNoChange
		}
		r := cur.Clone()
		r.Unread, r.TriggeredWord = false, ""
		r.UpdatedAt = s.nowMS()
		return r, nil
	})
	if err != nil {
		return Summary{}, err
	}
	s.view.ApplyRecord(c.Scope, sid, rec, rev)
	sum := s.summaryWith(sid, rec, c.Settings, s.botName(c.Scope, c.Binding, rec.BotUUID))
	s.publishLive(c.Scope, model.Live{Type: model.LiveSession, SID: sid, Data: sum})
	return sum, nil
}

// UserCard and GroupCard are the console's cards (spec §7.3).
type UserCard struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	Name      string `json:"name"`
	FromGroup bool   `json:"from_group"`
	GroupID   string `json:"group_id"`
	BotUUID   string `json:"bot_uuid"`
	BotName   string `json:"bot_name"`
	Adapter   string `json:"adapter"`
}

type GroupCard struct {
	Type        string       `json:"type"`
	ID          string       `json:"id"`
	Name        string       `json:"name"`
	MemberCount int          `json:"member_count"`
	Members     []MemberView `json:"members"`
	BotUUID     string       `json:"bot_uuid"`
	BotName     string       `json:"bot_name"`
	Adapter     string       `json:"adapter"`
}

func (s *Service) userInfo(ctx context.Context, c PageCall, req PageRequest) (UserCard, error) {
	rec, err := s.mustRecord(ctx, c.Scope, req.SID)
	if err != nil {
		return UserCard{}, err
	}
	bot := s.bots.get(ctx, c.Scope, c.Binding, rec.BotUUID)
	card := UserCard{Type: "user", BotUUID: rec.BotUUID, BotName: bot.name, Adapter: rec.Adapter}
	if rec.Type == model.LauncherGroup && req.MemberID != "" {
		i := slices.IndexFunc(rec.Members, func(m model.Member) bool { return m.ID == req.MemberID })
		if i < 0 {
			return UserCard{}, bus.Errorf(bus.ErrNotFound, "no such member")
		}
		card.ID, card.Name, card.FromGroup, card.GroupID = rec.Members[i].ID, rec.Members[i].Name, true, rec.TargetID
		return card, nil
	}
	card.ID, card.Name = rec.TargetID, rec.Name
	return card, nil
}

func (s *Service) groupInfo(ctx context.Context, c PageCall, sid string) (GroupCard, error) {
	rec, err := s.mustRecord(ctx, c.Scope, sid)
	if err != nil {
		return GroupCard{}, err
	}
	if rec.Type != model.LauncherGroup {
		return GroupCard{}, bus.Errorf(bus.ErrBadRequest, "not a group session")
	}
	bot := s.bots.get(ctx, c.Scope, c.Binding, rec.BotUUID)
	return GroupCard{Type: "group", ID: rec.TargetID, Name: rec.Name, MemberCount: len(rec.Members), Members: members(rec),
		BotUUID: rec.BotUUID, BotName: bot.name, Adapter: rec.Adapter}, nil
}

// BlobData is a blob as the page endpoint returns it.
type BlobData struct {
	Mime    string `json:"mime"`
	Size    int    `json:"size"`
	DataURL string `json:"data_url,omitempty"`
}

func (s *Service) blob(ctx context.Context, c PageCall, req PageRequest) (BlobData, error) {
	if !strings.HasPrefix(req.Name, c.Scope.String()+"."+req.SID+".") {
		return BlobData{}, bus.Errorf(bus.ErrNotFound, "no such attachment")
	}
	if _, err := s.mustRecord(ctx, c.Scope, req.SID); err != nil {
		return BlobData{}, err
	}
	data, mime, err := s.st.GetBlob(ctx, c.Scope, req.Name)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return BlobData{}, bus.Errorf(bus.ErrNotFound, "no such attachment")
	}
	if err != nil {
		return BlobData{}, err
	}
	if (len(data)+2)/3*4 > s.cfg.MaxBody-(64<<10) {
		return BlobData{}, bus.Errorf(bus.ErrTooLarge, "the attachment does not fit a page reply")
	}
	if mime == "" {
		mime = model.SniffMime(data)
	}
	return BlobData{Mime: mime, Size: len(data), DataURL: model.DataURL(mime, data)}, nil
}

// Export is the result of GET /export (spec §7.3).
type Export struct {
	Format     string              `json:"format"`
	Version    int                 `json:"version"`
	ExportedAt int64               `json:"exported_at"`
	ExportedBy string              `json:"exported_by"`
	Session    *model.Record       `json:"session"`
	Messages   []model.Entry       `json:"messages"`
	Blobs      map[string]BlobData `json:"blobs"`
}

func (s *Service) export(ctx context.Context, c PageCall, req PageRequest) (Export, error) {
	rec, err := s.mustRecord(ctx, c.Scope, req.SID)
	if err != nil {
		return Export{}, err
	}
	entries, _, err := s.st.ReadHistory(ctx, c.Scope, req.SID)
	if err != nil {
		return Export{}, err
	}
	out := Export{Format: "langbot.takeover.export", Version: 1, ExportedAt: s.nowMS(), ExportedBy: c.Operator,
		Session: rec, Messages: visible(entries, rec.Gen, c.Settings.HistoryLimit), Blobs: map[string]BlobData{}}
	total := 0
	for _, e := range out.Messages {
		for _, p := range e.Parts {
			if p.Blob == "" {
				continue
			}
			bd := BlobData{Mime: p.Mime, Size: int(p.Size)}
			if req.InlineBlobs {
				data, mime, err := s.st.GetBlob(ctx, c.Scope, p.Blob)
				if err == nil {
					total += len(data)
					if total > maxExportInline {
						return Export{}, bus.Errorf(bus.ErrTooLarge, "inline attachments exceed 64 MiB")
					}
					bd.Size, bd.DataURL = len(data), model.DataURL(cmp.Or(mime, p.Mime, model.SniffMime(data)), data)
				}
			}
			out.Blobs[p.Blob] = bd
		}
	}
	return out, nil
}

// deleteSession removes a session: the record first (a purge marker that
// every view sees), then its blobs, history and timer (spec §5.5 rule 5).
// A repeated call finishes what a failed one left.
func (s *Service) deleteSession(ctx context.Context, c PageCall, sid string) (map[string]bool, error) {
	rec, _, err := s.st.GetRecord(ctx, c.Scope, sid)
	existed := rec != nil || errors.Is(err, store.ErrCorrupt)
	if err != nil && !errors.Is(err, store.ErrCorrupt) {
		return nil, err
	}
	left, err := s.removeSession(ctx, c.Scope, sid, existed)
	if err != nil {
		return nil, err
	}
	if !existed && !left {
		return nil, bus.Errorf(bus.ErrNotFound, "no such session")
	}
	s.publishLive(c.Scope, model.Live{Type: model.LiveDeleted, SID: sid, Data: map[string]string{"sid": sid}})
	return map[string]bool{"deleted": true}, nil
}

// removeSession purges a session's key (when it exists), then collects the
// blob names of its history, deletes them, and removes the history up to the
// last sequence read and the timer. It reports whether any history was left.
func (s *Service) removeSession(ctx context.Context, sc binding.Scope, sid string, purgeKey bool) (bool, error) {
	if purgeKey {
		if err := s.st.PurgeRecord(ctx, sc, sid); err != nil {
			return false, err
		}
	}
	entries, last, err := s.st.ReadHistory(ctx, sc, sid)
	if err != nil {
		return false, err
	}
	var blobs []string
	for _, e := range entries {
		blobs = append(blobs, e.Blobs()...)
	}
	if err := s.st.DeleteBlobs(ctx, sc, blobs); err != nil {
		return false, err
	}
	if last > 0 {
		if err := s.st.PurgeHistory(ctx, sc, sid, last+1); err != nil {
			return false, err
		}
	}
	if err := s.st.CancelSchedule(ctx, sc, sid); err != nil {
		return false, err
	}
	return len(entries) > 0, nil
}

func (s *Service) clear(ctx context.Context, c PageCall) (map[string]int, error) {
	sids, err := s.st.SessionIDs(ctx, c.Scope)
	if err != nil {
		return nil, err
	}
	if err := s.st.PurgeRecords(ctx, c.Scope, sids); err != nil {
		return nil, err
	}
	if err := s.sweepScope(ctx, c.Scope); err != nil {
		return nil, err
	}
	s.publishLive(c.Scope, model.Live{Type: model.LiveCleared})
	return map[string]int{"cleared": len(sids)}, nil
}

// sweepScope removes the scope's history with the blobs its entries name,
// and its timers. Appends racing it survive; their sessions were purged, so
// they start afresh.
func (s *Service) sweepScope(ctx context.Context, sc binding.Scope) error {
	if err := s.st.SweepHistory(ctx, sc); err != nil {
		return err
	}
	return s.st.PurgeTimers(ctx, sc)
}
