package fakegithub

import (
	"encoding/json"
	"sort"
)

// WebhookFixtures returns the names of the webhook delivery fixtures,
// sorted.
func WebhookFixtures() []string {
	all := loadFixture("webhooks").(map[string]any)
	names := make([]string, 0, len(all))
	for k := range all {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// Webhook returns the named fixture delivery in the form GitHub posts it:
// its X-GitHub-Event name and its body. It panics on an unknown name.
func Webhook(fixture string) (event string, body []byte) {
	all := loadFixture("webhooks").(map[string]any)
	d, ok := all[fixture].(map[string]any)
	if !ok {
		panic("fakegithub: unknown webhook fixture " + fixture)
	}
	b, _ := json.Marshal(d["body"])
	return d["event"].(string), b
}
