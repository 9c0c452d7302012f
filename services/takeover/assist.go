package takeover

import (
	"context"
)

// suggestCommand serves `!ho suggest N` (AI assist, issue 31).
func (o *ops) suggestCommand(ctx context.Context, c pageCall, sid string, args map[string]string, say func(string, map[string]string) (any, error)) (any, error) {
	if !c.Settings.AIAssist {
		return say("cmd.suggest.off", nil)
	}
	return say("cmd.suggest.failed", nil)
}
