package events

import "strings"

// The subcommands of review reminders, personal notifications and AI
// summaries (the root's reviews.go, personal.go, summary.go).
const (
	SubReviews = "reviews"
	SubMe      = "me"
	SubSummary = "summary"
)

// featAliases maps their words, English and Chinese, to the subcommand.
var featAliases = map[string]string{
	"reviews": SubReviews, "review": SubReviews, "评审提醒": SubReviews, "评审": SubReviews,
	"me": SubMe, "我": SubMe,
	"summary": SubSummary, "sum": SubSummary, "总结": SubSummary, "摘要": SubSummary,
}

// subOf returns the canonical subcommand of a word.
func subOf(word string) (string, bool) {
	w := strings.ToLower(word)
	if s, ok := aliases[w]; ok {
		return s, true
	}
	s, ok := featAliases[w]
	return s, ok
}
