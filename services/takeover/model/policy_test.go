package model_test

import (
	"testing"

	"github.com/langbot-nats/plugins/services/takeover/model"
)

func TestGroupRecordingPolicyTable(t *testing.T) {
	cases := []struct {
		name  string
		facts model.RecordFacts
		user  map[string]bool
		ai    map[string]bool
	}{
		{"plain", model.RecordFacts{Group: true},
			map[string]bool{"all": true, "addressed": false, "active_only": false},
			map[string]bool{"all": true, "addressed": true, "active_only": false}},
		{"@bot", model.RecordFacts{Group: true, Addressed: true},
			map[string]bool{"all": true, "addressed": true, "active_only": false},
			map[string]bool{"all": true, "addressed": true, "active_only": false}},
		{"trigger", model.RecordFacts{Group: true, Triggered: true},
			map[string]bool{"all": true, "addressed": true, "active_only": true},
			map[string]bool{"all": true, "addressed": true, "active_only": false}},
		{"taken over", model.RecordFacts{Group: true, TakenOver: true},
			map[string]bool{"all": true, "addressed": true, "active_only": true},
			map[string]bool{"all": true, "addressed": true, "active_only": true}},
		{"unread", model.RecordFacts{Group: true, Unread: true},
			map[string]bool{"all": true, "addressed": false, "active_only": true},
			map[string]bool{"all": true, "addressed": true, "active_only": true}},
		{"person plain", model.RecordFacts{},
			map[string]bool{"all": true, "addressed": true, "active_only": true},
			map[string]bool{"all": true, "addressed": true, "active_only": true}},
	}
	for _, tt := range cases {
		for policy, want := range tt.user {
			if got := model.ShouldRecordUser(policy, tt.facts); got != want {
				t.Errorf("%s/%s user = %v, want %v", tt.name, policy, got, want)
			}
			if got := model.ShouldRecordAI(policy, tt.facts); got != tt.ai[policy] {
				t.Errorf("%s/%s ai = %v, want %v", tt.name, policy, got, tt.ai[policy])
			}
		}
	}
}
