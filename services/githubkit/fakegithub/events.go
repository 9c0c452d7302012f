package fakegithub

import (
	"encoding/json"
	"sort"
	"strconv"
)

// EventFixtures returns the names of the event fixtures, sorted. Names
// ending in _full have the payload GitHub sent before October 2025; names
// ending in _trimmed have the trimmed payload it sends since.
func EventFixtures() []string {
	all := loadFixture("events").(map[string]any)
	names := make([]string, 0, len(all))
	for k := range all {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// Event returns the named fixture event with the given id. The server fills
// the repo field when it serves the event. It panics on an unknown name.
func Event(fixture string, id int64) json.RawMessage {
	all := loadFixture("events").(map[string]any)
	ev, ok := all[fixture].(map[string]any)
	if !ok {
		panic("fakegithub: unknown event fixture " + fixture)
	}
	ev["id"] = strconv.FormatInt(id, 10)
	b, _ := json.Marshal(ev)
	return b
}

// RawEvent builds an event of any type with the given actor and payload.
func RawEvent(typ string, id int64, actor string, payload any) json.RawMessage {
	b, _ := json.Marshal(map[string]any{
		"id": strconv.FormatInt(id, 10), "type": typ,
		"actor":   map[string]any{"id": 1, "login": actor},
		"payload": payload, "public": true, "created_at": "2026-01-01T00:00:00Z",
	})
	return b
}
