package githubkit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/langbot-nats/plugins/services/githubkit/events"
)

// ImportPlan is the original plugin's subscription document, parsed and
// normalised into records (spec §6.4 rules 2-4), before any write.
type ImportPlan struct {
	// Records are in first-seen order, one per lower-cased repository.
	Records []ImportRecord
	// Notes report what was skipped or dropped, one line each.
	Notes []string
}

// ImportRecord is one record to create or merge.
type ImportRecord struct {
	Key    string
	Record RepoRecord
	// Merged counts the document's entries that folded into this record.
	Merged int
}

type origEntry struct {
	Subscribers map[string]origSub `json:"subscribers"`
	LastEventID json.RawMessage    `json:"last_event_id"`
}

type origSub struct {
	BotUUID    string          `json:"bot_uuid"`
	TargetType string          `json:"target_type"`
	TargetID   json.RawMessage `json:"target_id"`
	Events     []string        `json:"events"`
	AddedAt    string          `json:"added_at"`
}

// importKind maps one stored kind of the original to a canonical filter.
func importKind(k string) (string, bool) {
	k = strings.ToLower(strings.TrimSpace(k))
	switch k {
	case events.KindPush, events.KindPullRequest, events.KindIssues, events.KindIssueComment, events.KindRelease, events.KindStar, events.KindFork,
		events.KindCreate, events.KindDelete, events.KindBranch, events.KindTag, events.KindReview:
		return k, true
	case "pr_review", "pr_review_comment":
		return events.KindReview, true
	}
	c, ok := events.FilterKind(k)
	return c, ok
}

// jsonScalarString returns a JSON string or number as a string; ok is false
// for null, absent or anything else.
func jsonScalarString(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return strings.TrimSpace(s), true
	}
	var n json.Number
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if d.Decode(&n) == nil {
		return n.String(), true
	}
	return "", false
}

// ParseImport parses the whole document first (spec §6.4 rule 2) and builds
// the plan; invalid JSON or a non-object document fails with ErrImport. now
// stamps subscribers whose added_at is unreadable.
func ParseImport(doc []byte, now time.Time) (*ImportPlan, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("%w: invalid JSON: %w", ErrImport, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("%w: the document is not a JSON object", ErrImport)
	}
	type kv struct {
		name  string
		entry origEntry
	}
	var entries []kv
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%w: invalid JSON: %w", ErrImport, err)
		}
		name, _ := t.(string)
		var e origEntry
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("%w: invalid JSON at %q: %w", ErrImport, events.Echo(name), err)
		}
		entries = append(entries, kv{name, e})
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("%w: invalid JSON: %w", ErrImport, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: trailing data", ErrImport)
	}
	if _, err := dec.Token(); err == nil {
		return nil, fmt.Errorf("%w: trailing data", ErrImport)
	}

	plan := &ImportPlan{}
	index := map[string]int{}
	for _, kv := range entries {
		repo, err := events.ParseRepo(kv.name, "")
		if err != nil {
			plan.Notes = append(plan.Notes, fmt.Sprintf("repo %q skipped: not a repository", events.Echo(kv.name)))
			continue
		}
		key := RepoKey(repo.String())
		i, seen := index[key]
		if !seen {
			i = len(plan.Records)
			index[key] = i
			plan.Records = append(plan.Records, ImportRecord{Key: key, Record: RepoRecord{V: 1, FullName: repo.String()}})
		}
		rec := &plan.Records[i]
		rec.Merged++
		if id, ok := jsonScalarString(kv.entry.LastEventID); ok && isDecimal(id) {
			if rec.Record.Head == nil || CompareIDs(id, *rec.Record.Head) > 0 {
				rec.Record.Head = &id
			}
		}
		sids := make([]string, 0, len(kv.entry.Subscribers))
		for sid := range kv.entry.Subscribers {
			sids = append(sids, sid)
		}
		slices.Sort(sids)
		for _, sid := range sids {
			os := kv.entry.Subscribers[sid]
			tid, _ := jsonScalarString(os.TargetID)
			id := Identity{BotUUID: strings.TrimSpace(os.BotUUID), TargetType: os.TargetType, TargetID: tid}
			if id.BotUUID == "" || (id.TargetType != "person" && id.TargetType != "group") || id.TargetID == "" {
				plan.Notes = append(plan.Notes, fmt.Sprintf("repo %s: subscriber %q skipped: no bot, bad target type or empty target", repo, events.Echo(sid)))
				continue
			}
			var kinds []string
			if len(os.Events) > 0 {
				for _, k := range os.Events {
					c, ok := importKind(k)
					if !ok {
						plan.Notes = append(plan.Notes, fmt.Sprintf("repo %s: subscriber %q: unknown kind %q dropped", repo, events.Echo(sid), events.Echo(k)))
						continue
					}
					if !slices.Contains(kinds, c) {
						kinds = append(kinds, c)
					}
				}
				if len(kinds) == 0 {
					plan.Notes = append(plan.Notes, fmt.Sprintf("repo %s: subscriber %q skipped: no known kinds left", repo, events.Echo(sid)))
					continue
				}
			}
			if rec.Record.Find(id) != nil {
				plan.Notes = append(plan.Notes, fmt.Sprintf("repo %s: subscriber %q already listed, first kept", repo, events.Echo(sid)))
				continue
			}
			added, err := time.Parse(time.RFC3339Nano, os.AddedAt)
			if err != nil {
				added = now
			}
			rec.Record.Subscribers = append(rec.Record.Subscribers, &Subscriber{
				Identity: id, Kinds: kinds, AddedAt: added.UTC(), // no typed prefix: the notices use command_prefix
			})
		}
	}
	for i := range plan.Records {
		r := &plan.Records[i].Record
		for _, s := range r.Subscribers {
			if r.Head != nil {
				h := *r.Head
				s.Cursor = &h
			}
		}
		r.SortSubscribers()
	}
	return plan, nil
}
