package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
)

// System account requests of nats-server (events.go), for KickUser.
const (
	sysConnzPing = "$SYS.REQ.SERVER.PING.CONNZ"
	sysKick      = "$SYS.REQ.SERVER.%s.KICK"
)

// kickGather is how long KickUser collects the servers' answers to its
// connection list request: every server of a cluster answers, and the
// request cannot know how many there are.
const kickGather = time.Second

// ErrKick reports a connection list or kick the servers refused.
var ErrKick = errors.New("bus: kick")

// connTarget is one open connection: the server that holds it and its id
// there.
type connTarget struct {
	server string
	cid    uint64
}

// openConns lists the open connections of user, asking every server
// (sysConnzPing). On a system account connection it sees every account; on
// an account's own connection the server maps the request to that
// account's connections only.
func openConns(ctx context.Context, nc *nats.Conn, user string) ([]connTarget, error) {
	req, err := json.Marshal(map[string]any{"user": user, "state": 0, "limit": 1 << 16})
	if err != nil {
		return nil, err
	}
	inbox := nc.NewRespInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrKick, err)
	}
	defer sub.Unsubscribe()
	if err := nc.PublishRequest(sysConnzPing, inbox, req); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrKick, err)
	}
	type connz struct {
		Server struct {
			ID string `json:"id"`
		} `json:"server"`
		Data *struct {
			Conns []struct {
				CID uint64 `json:"cid"`
			} `json:"connections"`
		} `json:"data"`
		Error *struct {
			Description string `json:"description"`
		} `json:"error"`
	}
	var out []connTarget
	answered := 0
	for {
		wait := kickGather
		if answered == 0 {
			wait = 5 * time.Second // at least one server answers, or the user may not ask
		}
		wctx, cancel := context.WithTimeout(ctx, wait)
		m, err := sub.NextMsgWithContext(wctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			break
		}
		answered++
		var r connz
		if err := json.Unmarshal(m.Data, &r); err != nil {
			return nil, fmt.Errorf("%w: connz answer: %w", ErrKick, err)
		}
		if r.Error != nil {
			return nil, fmt.Errorf("%w: connz: %s", ErrKick, r.Error.Description)
		}
		if r.Data == nil {
			continue
		}
		for _, c := range r.Data.Conns {
			out = append(out, connTarget{r.Server.ID, c.CID})
		}
	}
	if answered == 0 {
		return nil, fmt.Errorf("%w: no server answered the connection list", ErrKick)
	}
	return out, nil
}

// KickUser closes every open connection of user on every server, through
// the system account: sys must be a connection of a system account user.
// It returns how many connections it closed. A kicked client reconnects,
// and its login goes through the auth callout again: once the tenant's
// record is removed (RemoveTenant) it is refused.
func KickUser(ctx context.Context, sys *nats.Conn, user string) (int, error) {
	targets, err := openConns(ctx, sys, user)
	if err != nil {
		return 0, err
	}
	kicked := 0
	for _, t := range targets {
		body, _ := json.Marshal(map[string]uint64{"cid": t.cid})
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		m, err := sys.RequestWithContext(rctx, fmt.Sprintf(sysKick, t.server), body)
		cancel()
		if err != nil {
			return kicked, fmt.Errorf("%w: connection %d on %s (is this a system account user?): %w", ErrKick, t.cid, t.server, err)
		}
		var r struct {
			Error *struct {
				Description string `json:"description"`
			} `json:"error"`
		}
		if json.Unmarshal(m.Data, &r) == nil && r.Error != nil {
			// gone meanwhile: closed by the client or by an earlier kick
			continue
		}
		kicked++
	}
	return kicked, nil
}

// LegacyPackageUser is the NATS user every LangBot package shared before
// tenant credentials (accounts.conf keeps it until the operator switches).
const LegacyPackageUser = "langbot_pkg"

// CountUserConns returns how many connections of user are open in the
// caller's own account, on every server.
func CountUserConns(ctx context.Context, nc *nats.Conn, user string) (int, error) {
	ts, err := openConns(ctx, nc, user)
	return len(ts), err
}
