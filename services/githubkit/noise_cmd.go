package githubkit

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/githubkit/events"
)

// quietCommand is "gh quiet [off | HH:MM-HH:MM]": this chat's quiet
// hours, or (admins only) a change of them. Events pushed in the window
// are held and summarised in one message when it ends.
func (n *noise) quietCommand(ctx context.Context, inv *bus.Invocation, st Settings, x texts, p events.Parsed, prefix string) (string, error) {
	id, ok := identity(inv.Command)
	if !ok {
		return x.T("err.no_bot"), nil
	}
	if len(p.Args) > 1 {
		return x.Usage(events.SubQuiet, prefix), nil
	}
	var q *quietHours
	word := ""
	if len(p.Args) == 1 {
		word = strings.ToLower(p.Args[0])
		if word != "off" {
			var err error
			if q, err = parseQuiet(word); err != nil {
				return x.Usage(events.SubQuiet, prefix), nil
			}
		}
		if inv.Command.Privilege < adminPrivilege {
			return x.T("noise.admin_only", "prefix", prefix), nil
		}
	}
	c, err := n.change(ctx, inv, id, st, word != "", func(c *chatNoise) { c.Quiet = q })
	if err != nil {
		return "", err
	}
	if c == nil || c.Quiet == nil {
		return x.T("noise.quiet_off", "prefix", prefix), nil
	}
	return x.T("noise.quiet_on", "from", clock(c.Quiet.From), "to", clock(c.Quiet.To), "zone", st.Zone.String(), "prefix", prefix), nil
}

// digestCommand is "gh digest [off | <interval>]": whether this chat gets
// one summary per interval instead of each event, or (admins only) a
// change of it.
func (n *noise) digestCommand(ctx context.Context, inv *bus.Invocation, st Settings, x texts, p events.Parsed, prefix string) (string, error) {
	id, ok := identity(inv.Command)
	if !ok {
		return x.T("err.no_bot"), nil
	}
	if len(p.Args) > 1 {
		return x.Usage(events.SubDigest, prefix), nil
	}
	every := time.Duration(0)
	change := len(p.Args) == 1
	if change {
		if w := strings.ToLower(p.Args[0]); w != "off" {
			d, err := time.ParseDuration(w)
			if err != nil || d < minDigest || d > maxDigest || d%time.Minute != 0 {
				return x.Usage(events.SubDigest, prefix), nil
			}
			every = d
		}
		if inv.Command.Privilege < adminPrivilege {
			return x.T("noise.admin_only", "prefix", prefix), nil
		}
	}
	c, err := n.change(ctx, inv, id, st, change, func(c *chatNoise) { c.DigestS = int(every / time.Second) })
	if err != nil {
		return "", err
	}
	if c == nil || c.DigestS == 0 {
		return x.T("noise.digest_off", "prefix", prefix), nil
	}
	return x.T("noise.digest_on", "every", interval(time.Duration(c.DigestS)*time.Second), "prefix", prefix), nil
}

// change applies fn to the chat's record (when write) and returns it. A
// record with no choice and nothing held is deleted; what is held when the
// choices are turned off is summarised at once.
func (n *noise) change(ctx context.Context, inv *bus.Invocation, id Identity, st Settings, write bool, fn func(c *chatNoise)) (*chatNoise, error) {
	recs := chatNoises(n.runner.KV())
	if !write {
		c, _, err := recs.Get(ctx, inv.Scope, id.SID())
		if err != nil {
			return nil, errStore(err)
		}
		return c, nil
	}
	now, loc := n.now(), st.Zone
	var arm *time.Time
	var del bool
	c, rev, err := recs.Update(ctx, inv.Scope, func(c *chatNoise) (*chatNoise, error) {
		arm, del = nil, false
		if c == nil {
			c = &chatNoise{V: 1}
		}
		c.Chat = id
		fn(c)
		if c.Quiet == nil && c.DigestS == 0 && len(c.Held) == 0 && c.More == 0 {
			del = true
			return c, nil
		}
		if len(c.Held) > 0 || c.More > 0 {
			// re-time the summary to the new choice (at once when off)
			at := c.nextFlush(now, loc).UTC().Truncate(time.Second)
			c.FlushAt, arm = &at, &at
		}
		return c, nil
	}, id.SID())
	if err != nil {
		return nil, errStore(err)
	}
	if del {
		if err := recs.Delete(ctx, inv.Scope, rev, id.SID()); err != nil {
			return nil, errStore(err)
		}
		return nil, nil
	}
	if arm != nil {
		if err := n.armFlush(ctx, inv.Scope, id.SID(), *arm); err != nil {
			return nil, wire.Errorf(wire.ErrUnavailable, "summary schedule not armed")
		}
	}
	return c, nil
}

// parseQuiet reads "HH:MM-HH:MM" (24-hour clock; the window may wrap
// midnight; an empty window is refused).
func parseQuiet(s string) (*quietHours, error) {
	from, to, ok := strings.Cut(s, "-")
	if !ok {
		return nil, fmt.Errorf("quiet hours %q: want HH:MM-HH:MM", s)
	}
	f, err := minutes(from)
	if err != nil {
		return nil, err
	}
	t, err := minutes(to)
	if err != nil {
		return nil, err
	}
	if f == t {
		return nil, fmt.Errorf("quiet hours: empty window")
	}
	return &quietHours{From: f, To: t}, nil
}

func minutes(s string) (int, error) {
	h, m, ok := strings.Cut(s, ":")
	if !ok || len(h) == 0 || len(h) > 2 || len(m) != 2 {
		return 0, fmt.Errorf("time %q: want HH:MM", s)
	}
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	if err1 != nil || err2 != nil || hh < 0 || hh > 23 || mm < 0 || mm > 59 {
		return 0, fmt.Errorf("time %q: want HH:MM", s)
	}
	return hh*60 + mm, nil
}

// interval renders a digest interval as it is typed: 1h, 90m.
func interval(d time.Duration) string {
	if d%time.Hour == 0 {
		return strconv.Itoa(int(d/time.Hour)) + "h"
	}
	return strconv.Itoa(int(d/time.Minute)) + "m"
}

func clock(m int) string { return fmt.Sprintf("%02d:%02d", m/60, m%60) }
