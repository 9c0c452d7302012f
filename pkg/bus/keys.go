package bus

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// KV key kinds: the token after "<scope>." of a key (DESIGN 4; the
// service specs). The ones every plugin has are here; a service declares
// its own subject and key kinds (githubkit and schenotify in their
// kinds.go, takeover in store/names.go).
const (
	KeyAuthority = "authority" // every plugin: <scope>.authority
	KeyInv       = "inv"       // dedupe buckets: <scope>.inv.<hash>
)

// Bucket returns the plugin's main KV bucket name, e.g. "langbot_githubkit".
func Bucket(plugin string) string { return "langbot_" + plugin }

// DedupeBucket returns the plugin's dedupe KV bucket name.
func DedupeBucket(plugin string) string { return "langbot_" + plugin + "_dedupe" }

// LifecycleConsumer returns the durable lifecycle consumer of a plugin.
func LifecycleConsumer(plugin string) string { return plugin + "-lifecycle" }

var pluginRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)

// AuthCalloutSubject is where the NATS server asks its auth callout
// service to authorize a client (nats-server's server.AuthCalloutSubject;
// it has no prefix of ours).
const AuthCalloutSubject = "$SYS.REQ.USER.AUTH"

// TenantBucket is the KV bucket of tenant credentials (bus.Tenant records
// keyed by the tenant's NATS user).
const TenantBucket = "langbot_tenants"

// Key is the KV key "<scope>.<kind>[.<id>...]"; each id must pass CheckID.
func Key(sc binding.Scope, kind string, ids ...string) (string, error) {
	if sc.IsZero() {
		return "", fmt.Errorf("%w: zero scope", binding.ErrInvalidScope)
	}
	if err := wire.CheckID(kind); err != nil {
		return "", err
	}
	for _, id := range ids {
		if err := wire.CheckID(id); err != nil {
			return "", err
		}
	}
	return join(append([]string{sc.String(), kind}, ids...)...), nil
}

// KVStream returns the name of the stream that holds a bucket, "KV_<bucket>".
func KVStream(bucket string) string { return "KV_" + bucket }

// directGetSubject is the JetStream API subject of a batched direct get on
// a stream (a single-message get appends the subject).
func directGetSubject(stream string) string { return jsAPI + "DIRECT.GET." + stream }

// msgGetSubject is the JetStream API subject of a message get on a stream,
// which only the stream's leader answers.
func msgGetSubject(stream string) string { return jsAPI + "STREAM.MSG.GET." + stream }

// KVSubject returns the stream subject under which a bucket stores the keys
// matching keyFilter, "$KV.<bucket>.<keyFilter>", for consumers that read
// a bucket's stream directly (a view with its own heartbeat handling).
func KVSubject(bucket, keyFilter string) string { return "$KV." + bucket + "." + keyFilter }

// KVKeysFilter matches one key kind of every scope: "*.*.*.<kind>.*".
func KVKeysFilter(kind string) string { return "*.*.*." + kind + ".*" }

// AuthorityKey is "<scope>.authority".
func AuthorityKey(sc binding.Scope) string { return sc.String() + "." + KeyAuthority }

// AuthorityKeysFilter matches every scope's authority key.
const AuthorityKeysFilter = "*.*.*." + KeyAuthority

// ScopeKeysFilter matches every key of one scope: "<scope>.>".
func ScopeKeysFilter(sc binding.Scope) string { return sc.String() + ".>" }

// InvocationKey is the dedupe key "<scope>.inv.<first 32 hex of sha256(id)>".
func InvocationKey(sc binding.Scope, invocationID string) string {
	return sc.String() + "." + KeyInv + "." + binding.HashToken(invocationID, 32)
}

// ParseKey splits a KV key into scope, kind and ids.
func ParseKey(key string) (sc binding.Scope, kind string, ids []string, err error) {
	t := strings.Split(key, ".")
	if len(t) < 4 {
		return binding.Scope{}, "", nil, fmt.Errorf("%w: %q", wire.ErrKey, key)
	}
	sc, err = binding.ScopeFromTokens(t[:3])
	if err != nil {
		return binding.Scope{}, "", nil, err
	}
	return sc, t[3], t[4:], nil
}
func checkPlugin(plugin string) error {
	if !pluginRE.MatchString(plugin) {
		return fmt.Errorf("bus: invalid plugin name %q", plugin)
	}
	return nil
}

func join(parts ...string) string { return strings.Join(parts, ".") }
