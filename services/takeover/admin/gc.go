package admin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/services/takeover/model"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

// GCOptions are the inputs of GCBlobs.
type GCOptions struct {
	Prefix string        // subject prefix; "langbot" when empty
	MinAge time.Duration // only objects older than this; default 1 h (no append still in flight)
	DryRun bool
	Now    func() time.Time
}

// GCSummary counts what GCBlobs did.
type GCSummary struct {
	Scanned, Young, Kept, Removed, Orphans int
}

func (s GCSummary) String() string {
	return fmt.Sprintf("scanned %d blobs: %d too young, %d kept, %d deleted of removed scopes, %d orphans deleted\n",
		s.Scanned, s.Young, s.Kept, s.Removed, s.Orphans)
}

// GCBlobs collects blobs no history entry names (spec §5.3 rule 7): the
// operator command lbctl gc takeover-blobs. Unlike the service it lists the
// whole bucket. An object older than MinAge is deleted when its scope is
// removed (authority tombstone) or when no entry of its session's subject
// names it.
func GCBlobs(ctx context.Context, js jetstream.JetStream, o GCOptions) (GCSummary, error) {
	var sum GCSummary
	if o.MinAge == 0 {
		o.MinAge = time.Hour
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	st, err := openStore(ctx, js, o.Prefix)
	if err != nil {
		return sum, err
	}
	defer st.Close()
	bucket, err := js.KeyValue(ctx, bus.Bucket(store.Plugin))
	if err != nil {
		return sum, err
	}
	auth := bus.NewAuthorityStore(bucket, nil, nil, now)
	objs, err := st.ListBlobs(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return sum, nil
	}
	if err != nil {
		return sum, err
	}
	removed := map[string]bool{}
	named := map[string]map[string]bool{} // scope.sid -> blob names its entries hold
	for _, info := range objs {
		sum.Scanned++
		if now().Sub(info.ModTime) < o.MinAge {
			sum.Young++
			continue
		}
		t := strings.Split(info.Name, ".")
		if len(t) != 6 || !model.ValidSID(t[3]) {
			sum.Kept++ // not a name the service makes: leave it
			continue
		}
		sc, err := binding.ScopeFromTokens(t[:3])
		if err != nil {
			sum.Kept++
			continue
		}
		rm, ok := removed[sc.String()]
		if !ok {
			a, err := auth.Get(ctx, sc)
			if err != nil {
				return sum, err
			}
			rm = a != nil && a.State == bus.StateRemoved
			removed[sc.String()] = rm
		}
		del := rm
		if !rm {
			key := sc.String() + "." + t[3]
			names, ok := named[key]
			if !ok {
				entries, _, err := st.ReadHistory(ctx, sc, t[3])
				if err != nil {
					return sum, err
				}
				names = map[string]bool{}
				for _, e := range entries {
					for _, b := range e.Blobs() {
						names[b] = true
					}
				}
				named[key] = names
			}
			del = !names[info.Name]
		}
		if !del {
			sum.Kept++
			continue
		}
		if !o.DryRun {
			if err := st.DeleteBlob(ctx, info.Name); err != nil {
				return sum, err
			}
		}
		if rm {
			sum.Removed++
		} else {
			sum.Orphans++
		}
	}
	return sum, nil
}
