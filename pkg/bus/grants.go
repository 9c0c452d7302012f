package bus

import (
	"slices"

	"github.com/nats-io/nats.go/micro"

	"github.com/langbot-nats/plugins/pkg/wire"
)

// The NATS permissions of the deployment's users (DESIGN 7) are derived
// from what the code declares: a service user's from its Runner's
// configuration (Runner.Grants), the auth callout's from AuthCallout's
// needs (AuthCalloutGrants), the host's and the packages' from the
// subjects of pkg/wire (HostGrants, LegacyPackageGrants). RenderAccounts
// writes them into the accounts file the deployment ships, so that no
// subject, stream or bucket name is written by hand a second time.

// GrantGroup is a run of subjects granted for one reason.
type GrantGroup struct {
	// Why is the reason, written as a comment above the subjects; a
	// newline starts a new comment line.
	Why      string
	Subjects []string
}

// UserGrants are the permissions of one user of the accounts file.
type UserGrants struct {
	User string
	// Publish and Subscribe are the allowed subjects; nothing else is.
	Publish   []GrantGroup
	Subscribe []GrantGroup
	// Responses, when not empty, is why the user may answer the requests
	// it received (allow_responses: one reply each).
	Responses string
}

// PublishAllowed lists every allowed publish subject, sorted, without
// repeats.
func (g UserGrants) PublishAllowed() []string { return flatten(g.Publish) }

// SubscribeAllowed lists every allowed subscribe subject, sorted, without
// repeats.
func (g UserGrants) SubscribeAllowed() []string { return flatten(g.Subscribe) }

func flatten(groups []GrantGroup) []string {
	var out []string
	for _, gr := range groups {
		out = append(out, gr.Subjects...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ResourceOwner is a Part that creates and uses JetStream resources of
// its own, beyond RunnerConfig.Streams and the runner's buckets
// (takeover's store: its history shards, timer stream and object store).
// Runner.Grants grants them to the service's user.
type ResourceOwner interface {
	Resources() Resources
}

// Resources are the JetStream resources a Part owns.
type Resources struct {
	// Streams the part creates and uses, each with the grants of an own
	// stream (StreamGrants).
	Streams []string
	// ObjectStores are object store buckets the part creates and uses.
	ObjectStores []string
	// Inspected are streams the part only looks up (stream info), such as
	// an earlier version's stream it refuses to start beside.
	Inspected []Inspected
}

// Inspected is a stream a part only looks up, and why.
type Inspected struct {
	Stream, Why string
}

// JetStream API subjects (nats-server's JSApi* templates; the client
// keeps its own unexported).
const (
	jsAPI = "$JS.API."
	jsAck = "$JS.ACK."
	jsFC  = "$JS.FC."
	// jsInfo is the account info request (readiness, limits).
	jsInfo = jsAPI + "INFO"
)

// objStream is the stream behind an object store bucket (KVStream is a
// KV bucket's).
func objStream(bucket string) string { return "OBJ_" + bucket }

// kvWrites is the subject space of a KV bucket's puts, deletes and
// purges; objWrites that of an object store's chunks and metadata.
func kvWrites(bucket string) string  { return KVSubject(bucket, ">") }
func objWrites(bucket string) string { return "$O." + bucket + ".>" }

// StreamGrants are the grants of a stream a service owns: create and
// update (it ensures its streams at start), info, purge, message get and
// delete, direct gets, consumers of any name with their info, delete and
// next-message requests, and acks and flow control replies in both
// subject formats ($JS.ACK.<stream>.> and the v2 form
// $JS.ACK.<domain>.<account hash>.<stream>.>). Not stream delete,
// snapshot or restore.
func StreamGrants(stream string) []string {
	return []string{
		jsAPI + "STREAM.CREATE." + stream,
		jsAPI + "STREAM.UPDATE." + stream,
		jsAPI + "STREAM.INFO." + stream,
		jsAPI + "STREAM.PURGE." + stream,
		msgGetSubject(stream),
		jsAPI + "STREAM.MSG.DELETE." + stream,
		directGetSubject(stream),
		directGetSubject(stream) + ".>",
		jsAPI + "CONSUMER.CREATE." + stream,
		jsAPI + "CONSUMER.CREATE." + stream + ".>",
		jsAPI + "CONSUMER.INFO." + stream + ".*",
		jsAPI + "CONSUMER.DELETE." + stream + ".*",
		jsAPI + "CONSUMER.MSG.NEXT." + stream + ".*",
		jsAck + stream + ".>",
		jsAck + "*.*." + stream + ".>",
		jsFC + stream + ".>",
		jsFC + "*.*." + stream + ".>",
	}
}

// kvReadGrants read a KV bucket someone else owns: stream info (the
// client's bind), message gets and direct gets, and $KV writes (a CAS
// write needs them too).
func kvReadGrants(bucket string) []string {
	s := KVStream(bucket)
	return []string{
		jsAPI + "STREAM.INFO." + s,
		msgGetSubject(s),
		directGetSubject(s),
		directGetSubject(s) + ".>",
		kvWrites(bucket),
	}
}

// Grants returns the permissions the runner's service needs as the NATS
// user named like its plugin: its invocations, internal subjects and
// micro discovery; host actions; its buckets, its streams (RunnerConfig
// Streams, the streams of its fired-message consumers, and the resources
// of its parts that are ResourceOwners) and its lifecycle consumer; its
// inbox. The auth callout every service process runs adds
// AuthCalloutGrants.
func (r *Runner) Grants() UserGrants {
	p, s := r.cfg.Plugin, r.subjects
	var res Resources
	for _, part := range r.cfg.Parts {
		if o, ok := part.(ResourceOwner); ok {
			pr := o.Resources()
			res.Streams = append(res.Streams, pr.Streams...)
			res.ObjectStores = append(res.ObjectStores, pr.ObjectStores...)
			res.Inspected = append(res.Inspected, pr.Inspected...)
		}
	}
	buckets := []string{Bucket(p), DedupeBucket(p)}
	writes := make([]string, 0, len(buckets)+len(res.ObjectStores))
	for _, b := range buckets {
		writes = append(writes, kvWrites(b))
	}
	for _, b := range res.ObjectStores {
		writes = append(writes, objWrites(b))
	}
	pub := []GrantGroup{
		{Why: "Internal subjects: schedules, fired timers, live feeds.", Subjects: []string{s.InternalRoot(p)}},
		{Why: "Host actions (request/reply).", Subjects: []string{s.HostAll()}},
		{Why: "Writes to its own buckets (KV puts, deletes, purges; object chunks).", Subjects: writes},
		{Why: "JetStream account info (readiness, limits).", Subjects: []string{jsInfo}},
	}
	for _, b := range buckets {
		pub = append(pub, GrantGroup{Why: "Its stream " + KVStream(b) + ".", Subjects: StreamGrants(KVStream(b))})
	}
	for _, in := range res.Inspected {
		pub = append(pub, GrantGroup{Why: in.Why, Subjects: []string{jsAPI + "STREAM.INFO." + in.Stream}})
	}
	var streams []string
	for _, spec := range r.cfg.Streams {
		streams = append(streams, spec.Name)
	}
	streams = append(streams, res.Streams...)
	for _, c := range r.cfg.Consumers {
		streams = append(streams, c.Stream)
	}
	seen := map[string]bool{}
	for _, st := range streams {
		if !seen[st] {
			seen[st] = true
			pub = append(pub, GrantGroup{Why: "Its stream " + st + ".", Subjects: StreamGrants(st)})
		}
	}
	for _, b := range res.ObjectStores {
		pub = append(pub, GrantGroup{Why: "Its stream " + objStream(b) + ".", Subjects: StreamGrants(objStream(b))})
	}
	durable := LifecycleConsumer(p)
	pub = append(pub, GrantGroup{
		Why: "The shared lifecycle stream only through the durable consumer\n" + durable +
			" filtered on this plugin's messages (the filter is\npart of the create subject, so no other filter is accepted). No\n" +
			"stream info: with a subjects filter it lists every installation\nof every plugin.",
		Subjects: []string{
			jsAPI + "CONSUMER.CREATE." + wire.LifecycleStream + "." + durable + "." + s.LifecycleFilter(p),
			jsAPI + "CONSUMER.INFO." + wire.LifecycleStream + "." + durable,
			jsAPI + "CONSUMER.MSG.NEXT." + wire.LifecycleStream + "." + durable,
			jsAck + wire.LifecycleStream + "." + durable + ".>",
			jsAck + "*.*." + wire.LifecycleStream + "." + durable + ".>",
		},
	})
	sub := []GrantGroup{
		{Why: "Invocations of this plugin only (micro endpoints, queue group " + p + ").", Subjects: []string{s.PluginAll(p)}},
		{Why: "Internal subjects (live feeds and the like).", Subjects: []string{s.InternalRoot(p)}},
		{Why: "Replies to its own requests (JetStream API, host actions) and\ndeliveries of its push consumers (KV watch, object store reads).",
			Subjects: []string{wire.InboxPrefixFor(p) + ".>"}},
		{Why: "micro discovery: the generic verbs and this service's own forms.", Subjects: discoveryGrants(p)},
	}
	return UserGrants{User: p, Publish: pub, Subscribe: sub,
		Responses: "Answer invocations and discovery requests it received (one reply each)."}
}

// discoveryGrants are the micro control subjects a service named name
// answers: the generic verbs and its own "$SRV.<verb>.<name>[.<id>]".
func discoveryGrants(name string) []string {
	var out []string
	for _, v := range []micro.Verb{micro.PingVerb, micro.InfoVerb, micro.StatsVerb} {
		subj, _ := micro.ControlSubject(v, "", "")
		out = append(out, subj)
	}
	return append(out, micro.APIPrefix+".*."+name, micro.APIPrefix+".*."+name+".*")
}

// AuthCalloutGrants are what the auth callout responder (AuthCallout)
// adds to the user of the service process that runs it: read tenant
// records and bind a claimable one (CAS), count the legacy user's
// connections, and receive the logins.
func AuthCalloutGrants() (publish, subscribe []GrantGroup) {
	return []GrantGroup{
			{Why: "The auth callout responder (pkg/bus AuthCallout) reads tenant\nrecords and binds a claimable one to its first instance (CAS).",
				Subjects: kvReadGrants(TenantBucket)},
			{Why: "... and warns about connections of the legacy user " + LegacyPackageUser + "\n(the server answers with this account's connections only).",
				Subjects: []string{sysConnzPing}},
		}, []GrantGroup{
			{Why: "Logins of tenant credentials (the auth callout, queue group\n" + AuthCalloutQueue + "); the answer is a reply.",
				Subjects: []string{AuthCalloutSubject}},
		}
}

// HostGrants are the permissions of the host user under subjects s:
// invoke every plugin, publish lifecycle messages, run lbctl setup (the
// lifecycle stream and the tenant bucket), list the services, and serve
// host actions.
func HostGrants(s wire.Subjects) UserGrants {
	const user = "host"
	ls := wire.LifecycleStream
	return UserGrants{User: user,
		Publish: []GrantGroup{
			{Why: "Invocations of every plugin (request/reply).", Subjects: []string{s.InvocationsAll()}},
			{Why: "Lifecycle messages (JetStream publish, acknowledged by the stream).", Subjects: []string{s.LifecycleAll()}},
			{Why: "\"lbctl setup\": create, update and inspect " + ls + ".", Subjects: []string{jsInfo,
				jsAPI + "STREAM.CREATE." + ls, jsAPI + "STREAM.UPDATE." + ls, jsAPI + "STREAM.INFO." + ls}},
			{Why: "\"lbctl setup\": create and update the tenant bucket, and write\nthe first tenant of a single-host deployment (--first-tenant).",
				Subjects: append([]string{jsAPI + "STREAM.CREATE." + KVStream(TenantBucket), jsAPI + "STREAM.UPDATE." + KVStream(TenantBucket)},
					kvReadGrants(TenantBucket)...)},
			{Why: "micro discovery of the services (nats micro ls/info/stats).", Subjects: []string{micro.APIPrefix + ".>"}},
		},
		Subscribe: []GrantGroup{
			{Why: "Serve host actions (queue group).", Subjects: []string{s.HostAll()}},
			{Why: "Replies to its own requests.", Subjects: []string{wire.InboxPrefixFor(user) + ".>"}},
		},
		Responses: "Answer the host actions it received.",
	}
}
