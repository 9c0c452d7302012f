package admin

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/settings"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover/model"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

// ErrImport wraps every failure of Import that stops it as a whole.
var ErrImport = errors.New("takeover: import")

// Import limits (spec §10).
const (
	maxImportEntries = 2000
	importSchemaKey  = "ht_storage_schema"
	importRecordKey  = "ht_session_v2_"
)

// ImportOptions are the inputs of Import.
type ImportOptions struct {
	Scope binding.Scope
	// Prefix is the subject prefix; "langbot" when empty.
	Prefix string
	// Data is the original plugin's storage: a JSON object {key: base64
	// value}, or JSON lines {"key", "value_base64"}.
	Data []byte
	// SourcePrefix selects the keys; nil means "<instance>:<workspace>:
	// <installation>:" of Scope, and "" selects a dedicated install's keys.
	SourcePrefix *string
	DryRun       bool
	Now          func() time.Time
}

// ImportSummary counts the outcome of each selected record.
type ImportSummary struct {
	Imported int      // new records written
	Resumed  int      // imports marked running, finished now
	Skipped  int      // existing records, not touched
	Invalid  int      // records that failed validation
	Ignored  int      // keys of other prefixes or kinds
	Entries  int      // history entries written
	Problems []string // one line per invalid or skipped record, without content
}

func (s *ImportSummary) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "imported %d, resumed %d, skipped %d, invalid %d, ignored keys %d, entries %d\n",
		s.Imported, s.Resumed, s.Skipped, s.Invalid, s.Ignored, s.Entries)
	for _, p := range s.Problems {
		b.WriteString("  " + p + "\n")
	}
	return b.String()
}

// Import adopts the original plugin's stored session records into a scope
// (spec §10 "Import"). It is idempotent and resumable: a record is created
// marked running, its history subject is purged and refilled with entries
// whose ids derive from scope, sid and index, then the mark becomes done.
// Takeovers arrive released. The service's streams and buckets must exist
// (the service has run once).
func Import(ctx context.Context, js jetstream.JetStream, o ImportOptions) (*ImportSummary, error) {
	if o.Scope.IsZero() {
		return nil, fmt.Errorf("%w: no scope", ErrImport)
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	prefix := strings.ReplaceAll(o.Scope.String(), ".", ":") + ":"
	if o.SourcePrefix != nil {
		prefix = *o.SourcePrefix
	}
	rows, err := parseImportRows(o.Data)
	if err != nil {
		return nil, err
	}
	sum := &ImportSummary{}
	if v, ok := rows[prefix+importSchemaKey]; ok && strings.TrimSpace(string(v)) != "2" {
		return nil, fmt.Errorf("%w: unsupported storage schema marker", ErrImport)
	}
	type item struct {
		sid string
		raw []byte
	}
	var items []item
	for k, v := range rows {
		suffix, ok := strings.CutPrefix(k, prefix+importRecordKey)
		if !ok || !model.ValidSID(suffix) {
			sum.Ignored++
			continue
		}
		items = append(items, item{suffix, v})
	}
	sort.Slice(items, func(i, j int) bool { return items[i].sid < items[j].sid })

	var st *store.Store
	if !o.DryRun {
		if st, err = openStore(ctx, js, o.Prefix); err != nil {
			return nil, err
		}
		defer st.Close()
	}
	for _, it := range items {
		plan, err := planImport(o.Scope, it.sid, it.raw, now().UnixMilli())
		if err != nil {
			sum.Invalid++
			sum.Problems = append(sum.Problems, fmt.Sprintf("%s: %v", it.sid, err))
			continue
		}
		if o.DryRun {
			sum.Imported++
			sum.Entries += len(plan.entries)
			continue
		}
		outcome, err := importOne(ctx, st, o.Scope, it.sid, plan)
		if err != nil {
			return sum, fmt.Errorf("%w: session %s: %w", ErrImport, it.sid, err)
		}
		switch outcome {
		case "imported":
			sum.Imported++
			sum.Entries += len(plan.entries)
		case "resumed":
			sum.Resumed++
			sum.Entries += len(plan.entries)
		default:
			sum.Skipped++
			sum.Problems = append(sum.Problems, it.sid+": exists, skipped")
		}
	}
	return sum, nil
}

// isLineRow reports whether a parsed object is one JSON-lines row rather
// than a storage map (whose keys are never literally "key").
func isLineRow(obj map[string]string) bool {
	_, k := obj["key"]
	_, v := obj["value_base64"]
	return k && v && len(obj) == 2
}

// parseImportRows reads the input as a JSON object or JSON lines.
func parseImportRows(data []byte) (map[string][]byte, error) {
	data = bytes.TrimSpace(data)
	rows := map[string][]byte{}
	decode := func(key, v string) error {
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			return fmt.Errorf("%w: value of a key is not base64", ErrImport)
		}
		rows[key] = b
		return nil
	}
	var obj map[string]string
	if err := json.Unmarshal(data, &obj); err == nil && !isLineRow(obj) {
		for k, v := range obj {
			if err := decode(k, v); err != nil {
				return nil, err
			}
		}
		return rows, nil
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var row struct {
			Key         string `json:"key"`
			ValueBase64 string `json:"value_base64"`
		}
		if err := json.Unmarshal(line, &row); err != nil || row.Key == "" {
			return nil, fmt.Errorf("%w: input is neither a JSON object nor JSON lines of {key, value_base64}", ErrImport)
		}
		if err := decode(row.Key, row.ValueBase64); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrImport, err)
	}
	return rows, nil
}

// importPlan is one record ready to write.
type importPlan struct {
	rec     *model.Record
	entries []importEntry
}

type importEntry struct {
	e     model.Entry
	parts []model.Part
}

// planImport validates and maps one original record (spec §10 rules 3-4).
func planImport(sc binding.Scope, sid string, raw []byte, now int64) (*importPlan, error) {
	var top struct {
		SessionKey string          `json:"session_key"`
		Session    json.RawMessage `json:"session"`
		Messages   json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, errors.New("not a JSON record")
	}
	sum := sha256.Sum256([]byte(top.SessionKey))
	if hex.EncodeToString(sum[:]) != sid {
		return nil, errors.New("sha256(session_key) differs from the key")
	}
	var session map[string]json.RawMessage
	if s := bytes.TrimSpace(top.Session); len(s) > 0 && string(s) != "null" {
		if s[0] != '{' || json.Unmarshal(s, &session) != nil {
			return nil, errors.New("session is not an object")
		}
	}
	var msgs []map[string]json.RawMessage
	if m := bytes.TrimSpace(top.Messages); len(m) > 0 && string(m) != "null" {
		if m[0] != '[' || json.Unmarshal(m, &msgs) != nil {
			return nil, errors.New("messages is not an array of objects")
		}
		for _, m := range msgs {
			if m == nil {
				return nil, errors.New("messages is not an array of objects")
			}
		}
	}
	// identity: from the session, else from the key
	bot, typ, target := "", "", ""
	rest := top.SessionKey
	if i := strings.Index(rest, ":"); i >= 0 {
		bot, rest = rest[:i], rest[i+1:]
	}
	if t, id, ok := strings.Cut(rest, "_"); ok {
		typ, target = t, id
	}
	str := func(k string) (string, bool) {
		v, ok := session[k]
		if !ok {
			return "", false
		}
		s, ok := settings.ScalarText(v)
		return s, ok
	}
	if v, ok := str("type"); ok && v != "" {
		typ = v
	}
	if v, ok := str("target_id"); ok && v != "" {
		target = v
	}
	if v, ok := str("bot_uuid"); ok {
		bot = v
	}
	if typ != model.LauncherPerson && typ != model.LauncherGroup {
		typ = model.LauncherPerson
	}
	rec := &model.Record{V: 1, Gen: model.NewGen(), SessionKey: top.SessionKey, Type: typ, TargetID: target, BotUUID: bot,
		Members: []model.Member{}, CreatedAt: now, UpdatedAt: now}
	rec.Name, _ = str("name")
	rec.Adapter, _ = str("adapter")
	if v, ok := session["unread"]; ok {
		_ = json.Unmarshal(v, &rec.Unread)
	}
	rec.TriggeredWord, _ = str("triggered_word")
	if v, ok := session["last_msg_at"]; ok {
		rec.LastMsgAt = secondsToMS(v)
	}
	if v, ok := str("last_msg_preview"); ok && v != "" {
		rec.LastPreview = model.Preview{Kind: model.PartText, Text: settings.CutRunes(v, model.MaxPreviewRunes)}
	}
	if v, ok := session["members"]; ok {
		for _, m := range orderedMembers(v) {
			if len(rec.Members) == model.MaxMembers {
				break
			}
			rec.Members = append(rec.Members, model.Member{ID: m[0], Name: settings.CutRunes(m[1], model.MaxMemberNameRunes)})
		}
	}
	if v, ok := session["takeover"]; ok {
		var t struct {
			StartedAt   json.RawMessage `json:"started_at"`
			LastHumanAt json.RawMessage `json:"last_human_at"`
		}
		_ = json.Unmarshal(v, &t)
		// a takeover arrives released: an import never blocks the AI
		rec.Takeover = model.TakeoverState{StartedAt: secondsToMS(t.StartedAt), LastHumanAt: secondsToMS(t.LastHumanAt)}
	}
	extra := map[string]json.RawMessage{}
	known := map[string]bool{"session_key": true, "type": true, "target_id": true, "bot_uuid": true, "name": true, "adapter": true,
		"members": true, "last_msg_at": true, "last_msg_preview": true, "unread": true, "triggered_word": true, "takeover": true}
	for k, v := range session {
		if !known[k] {
			extra[k] = v
		}
	}
	rec.Legacy = model.IsLegacy(rec)
	rec.Import = &model.ImportState{State: "running", At: now, Extra: extra}
	if len(extra) == 0 {
		rec.Import.Extra = nil
	}

	if len(msgs) > maxImportEntries {
		msgs = msgs[len(msgs)-maxImportEntries:]
	}
	plan := &importPlan{rec: rec}
	for i, m := range msgs {
		get := func(k string) string {
			s, _ := settings.ScalarText(m[k])
			return s
		}
		role := get("role")
		switch role {
		case model.RoleUser, model.RoleAI, model.RoleHuman:
		default:
			role = model.RoleUser
		}
		content := get("content")
		var part model.Part
		switch get("content_type") {
		case "image":
			l := strings.ToLower(content)
			if strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "https://") {
				part = model.Part{Type: model.PartImage, URL: content}
			} else if data, err := model.DecodeDataURL(content, model.MaxAttachmentBytes); err == nil {
				part = model.Part{Type: model.PartImage, Data: data, Size: int64(len(data)), Mime: model.SniffMime(data)}
				if !model.RasterImage(part.Mime) {
					part.Type, part.Name = model.PartFile, "image"
				}
			} else {
				part = model.Part{Type: model.PartImage, Omitted: model.OmittedInvalid}
			}
		case "file":
			part = model.Part{Type: model.PartFile, Name: model.SanitizeFileName(content)}
		default:
			text, cut := model.CutText(content, model.MaxTextBytes)
			part = model.Part{Type: model.PartText, Text: text}
			_ = cut
		}
		e := model.Entry{V: 1, ID: model.ImportEntryID(sc.String(), "", i), TS: secondsToMS(m["ts"]), Role: role}
		if role == model.RoleUser {
			e.SenderID, e.SenderName = get("sender_id"), get("sender_name")
		}
		plan.entries = append(plan.entries, importEntry{e: e, parts: []model.Part{part}})
	}
	rec.HistoryCount = len(plan.entries)
	return plan, nil
}

// secondsToMS converts float epoch seconds to ms (0 for anything else).
func secondsToMS(v json.RawMessage) int64 {
	var f float64
	if json.Unmarshal(v, &f) != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > 1e11 {
		return 0
	}
	return int64(math.Round(f * 1000))
}

// orderedMembers reads a members map {id: name} in JSON order.
func orderedMembers(v json.RawMessage) [][2]string {
	dec := json.NewDecoder(bytes.NewReader(v))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var out [][2]string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return out
		}
		id, _ := t.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return out
		}
		name, _ := settings.ScalarText(val)
		if id != "" {
			out = append(out, [2]string{id, name})
		}
	}
	return out
}

// importOne writes one record: create marked running (or resume a running
// one), purge its subject, append the entries, mark done.
func importOne(ctx context.Context, st *store.Store, sc binding.Scope, sid string, plan *importPlan) (string, error) {
	outcome := "imported"
	rec, _, err := st.GetRecord(ctx, sc, sid)
	switch {
	case err != nil:
		return "", err
	case rec == nil:
		b, _ := json.Marshal(plan.rec)
		if err := st.CreateRecord(ctx, sc, sid, b); err != nil {
			return "", err
		}
		rec = plan.rec
	case rec.Import == nil || rec.Import.State == "done":
		return "skipped", nil
	default:
		outcome = "resumed"
	}
	if err := st.PurgeHistory(ctx, sc, sid, 0); err != nil {
		return "", err
	}
	for i, ie := range plan.entries {
		e := ie.e
		e.ID = model.ImportEntryID(sc.String(), sid, i)
		e.Gen = rec.Gen
		e.Parts = make([]model.Part, len(ie.parts))
		for j, p := range ie.parts {
			if p.Data != nil {
				name := store.BlobName(sc, sid, e.ID, j)
				if err := st.PutBlob(ctx, sc, name, p.Data, p.Mime, ""); err != nil {
					return "", err
				}
				p.Blob, p.Data = name, nil
			}
			e.Parts[j] = p
		}
		// no Nats-Msg-Id: a resumed import re-appends after the purge within
		// the duplicate window, and the purge already rules out duplicates
		if _, err := st.AppendEntryWith(ctx, sc, sid, &e, false); err != nil {
			return "", err
		}
	}
	_, _, err = st.UpdateRecord(ctx, sc, sid, func(cur *model.Record) (*model.Record, error) {
		if cur == nil || cur.Import == nil {
			return nil, store.ErrNoChange
		}
		r := cur.Clone()
		r.Import.State = "done"
		r.HistoryCount = len(plan.entries)
		return r, nil
	})
	return outcome, err
}

// openStore opens the service's existing resources for the tools here,
// which run outside the service.
func openStore(ctx context.Context, js jetstream.JetStream, prefix string) (*store.Store, error) {
	subj, err := wire.NewSubjects(prefix)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrImport, err)
	}
	st, err := store.Open(ctx, js, subj)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrImport, err)
	}
	return st, nil
}
