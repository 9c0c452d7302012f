package takeover_test

import (
	"testing"

	"github.com/langbot-nats/plugins/services/takeover"
)

func TestGroupRecordingPolicyTable(t *testing.T) {
	cases := []struct {
		name  string
		facts takeover.RecordFacts
		user  map[string]bool
		ai    map[string]bool
	}{
		{"plain", takeover.RecordFacts{Group: true},
			map[string]bool{"all": true, "addressed": false, "active_only": false},
			map[string]bool{"all": true, "addressed": true, "active_only": false}},
		{"@bot", takeover.RecordFacts{Group: true, Addressed: true},
			map[string]bool{"all": true, "addressed": true, "active_only": false},
			map[string]bool{"all": true, "addressed": true, "active_only": false}},
		{"trigger", takeover.RecordFacts{Group: true, Triggered: true},
			map[string]bool{"all": true, "addressed": true, "active_only": true},
			map[string]bool{"all": true, "addressed": true, "active_only": false}},
		{"taken over", takeover.RecordFacts{Group: true, TakenOver: true},
			map[string]bool{"all": true, "addressed": true, "active_only": true},
			map[string]bool{"all": true, "addressed": true, "active_only": true}},
		{"unread", takeover.RecordFacts{Group: true, Unread: true},
			map[string]bool{"all": true, "addressed": false, "active_only": true},
			map[string]bool{"all": true, "addressed": true, "active_only": true}},
		{"person plain", takeover.RecordFacts{},
			map[string]bool{"all": true, "addressed": true, "active_only": true},
			map[string]bool{"all": true, "addressed": true, "active_only": true}},
	}
	for _, tt := range cases {
		for policy, want := range tt.user {
			if got := takeover.ShouldRecordUser(policy, tt.facts); got != want {
				t.Errorf("%s/%s user = %v, want %v", tt.name, policy, got, want)
			}
			if got := takeover.ShouldRecordAI(policy, tt.facts); got != tt.ai[policy] {
				t.Errorf("%s/%s ai = %v, want %v", tt.name, policy, got, tt.ai[policy])
			}
		}
	}
}
