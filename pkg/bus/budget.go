package bus

import (
	"context"
	"slices"

	"github.com/langbot-nats/plugins/pkg/binding"
)

// DailyBudget counts one installation's uses of something costly per day
// (calls of the host's LLM: AI-written reminders, summaries, handoff
// assists) in its scoped KV, at <scope>.<kind>, so the count survives a
// restart and is shared by every replica. Each use is charged under a key
// (an occurrence, an invocation id): charging a key again, as a retried
// invocation or delivery does, takes nothing more and gives the first
// answer, so a retry never spends the budget twice.
type DailyBudget struct {
	records *Records[budgetDay]
}

// budgetDay is the stored value of a DailyBudget.
type budgetDay struct {
	V int `json:"v"`
	// Day is the date the count belongs to, in the caller's zone
	// (YYYY-MM-DD); another day starts from zero.
	Day  string `json:"day"`
	Used int    `json:"used"`
	// Charged are the keys charged on Day: at most the day's limit.
	Charged []string `json:"charged"`
}

// NewDailyBudget returns the budget stored under kind in kv; fault is
// the Records fault seam (nil in production).
func NewDailyBudget(kv *KV, kind string, fault func(op string, sc binding.Scope) error) *DailyBudget {
	return &DailyBudget{records: NewRecords(kv, kind, RecordsConfig[budgetDay]{Fault: fault})}
}

// Charge takes one use of sc's budget of limit per day on day for key,
// unless key was charged on that day already, and reports whether the use
// may go ahead. A stored later day (another replica's clock ahead) is
// kept: the count never goes back to an earlier day, and a use on the
// earlier day is then charged against the later one.
func (b *DailyBudget) Charge(ctx context.Context, sc binding.Scope, limit int, day, key string) (bool, error) {
	allowed := false
	_, _, err := b.records.Update(ctx, sc, func(cur *budgetDay) (*budgetDay, error) {
		d := budgetDay{V: 1, Day: day}
		if cur != nil && cur.Day >= day {
			d = *cur
			d.Charged = slices.Clone(cur.Charged)
		}
		switch {
		case slices.Contains(d.Charged, key):
			allowed = true
			return nil, ErrNoChange
		case d.Used >= limit:
			allowed = false
			return nil, ErrNoChange
		}
		allowed = true
		d.Used++
		d.Charged = append(d.Charged, key)
		return &d, nil
	})
	if err != nil {
		return false, err
	}
	return allowed, nil
}
