package bus

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/nats-io/nats.go"
)

// errCodeNoMessage is JetStream's error code for a message get that
// matched nothing.
const errCodeNoMessage = 10037

// LeaderLastSequence returns the stream sequence of the last message on
// filter (a subject, wildcards allowed) as the stream's leader holds it;
// 0 when none matches.
//
// A consumer, a direct get or a bucket read may be served by any replica
// of a clustered stream, and a follower may not have applied the newest
// acknowledged messages yet (one restarted a moment ago can be far
// behind). This asks the leader, which stores a message before it
// acknowledges it: a read that must not miss an acknowledged message reads
// until it has this sequence. Without a deadline on ctx it waits 5 s.
func LeaderLastSequence(ctx context.Context, nc *nats.Conn, stream, filter string) (uint64, error) {
	ctx, cancel := withDefault(ctx)
	defer cancel()
	body, err := json.Marshal(struct {
		LastBySubject string `json:"last_by_subj"`
	}{filter})
	if err != nil {
		return 0, err
	}
	m, err := nc.RequestWithContext(ctx, msgGetSubject(stream), body)
	if err != nil {
		return 0, fmt.Errorf("bus: last sequence of %s: %w", stream, err)
	}
	var resp struct {
		Message *struct {
			Seq uint64 `json:"seq"`
		} `json:"message"`
		Error *struct {
			Code        int    `json:"code"`
			ErrCode     int    `json:"err_code"`
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(m.Data, &resp); err != nil {
		return 0, fmt.Errorf("bus: last sequence of %s: %w", stream, err)
	}
	switch {
	case resp.Error != nil && resp.Error.ErrCode == errCodeNoMessage:
		return 0, nil
	case resp.Error != nil:
		return 0, fmt.Errorf("bus: last sequence of %s: %d %s", stream, resp.Error.Code, resp.Error.Description)
	case resp.Message == nil:
		return 0, fmt.Errorf("bus: last sequence of %s: an answer without a message", stream)
	}
	return resp.Message.Seq, nil
}
