package deploy

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"github.com/langbot-nats/plugins/pkg/bus"
)

// scope is a valid installation scope (instance.workspace.installation).
const scope = "inst-1.ws-1.inst-a"

// pluginSpec is what one service owns in JetStream, as the specs define it.
type pluginSpec struct {
	name      string
	buckets   []jetstream.KeyValueConfig
	streams   []jetstream.StreamConfig
	work      jetstream.ConsumerConfig // the durable pull consumer on streams[0]
	workSubj  string                   // a subject that consumer takes
	schedSubj string                   // a schedule subject ("" when it has none)
	objects   string                   // object store bucket ("" when none)
	// lookOnly are streams it may only look up (takeover: the single
	// history stream of earlier versions, which it refuses to start
	// beside) and never create.
	lookOnly []string
}

var plugins = []pluginSpec{
	{
		name: "githubkit",
		buckets: []jetstream.KeyValueConfig{
			{Bucket: "langbot_githubkit", Storage: jetstream.FileStorage},
			{Bucket: "langbot_githubkit_dedupe", Storage: jetstream.FileStorage, TTL: 10 * time.Minute},
		},
		streams: []jetstream.StreamConfig{{
			Name:              "LANGBOT_GITHUBKIT",
			Subjects:          []string{"langbot.githubkit.sched.>", "langbot.githubkit.poll.>"},
			Storage:           jetstream.FileStorage,
			MaxMsgsPerSubject: 1,
			AllowMsgSchedules: true,
		}},
		work:      jetstream.ConsumerConfig{Durable: "githubkit-poll", FilterSubject: "langbot.githubkit.poll.>", AckPolicy: jetstream.AckExplicitPolicy},
		workSubj:  "langbot.githubkit.poll." + scope + ".cmVwbw",
		schedSubj: "langbot.githubkit.sched." + scope + ".cmVwbw",
	},
	{
		name: "takeover",
		buckets: []jetstream.KeyValueConfig{
			{Bucket: "langbot_takeover", Storage: jetstream.FileStorage},
			{Bucket: "langbot_takeover_dedupe", Storage: jetstream.FileStorage, TTL: 24 * time.Hour},
		},
		streams: append([]jetstream.StreamConfig{{
			Name:              "LANGBOT_TAKEOVER_TIMERS",
			Subjects:          []string{"langbot.takeover.timer.>", "langbot.takeover.expire.>"},
			Storage:           jetstream.FileStorage,
			MaxMsgsPerSubject: 1,
			MaxAge:            7 * 24 * time.Hour,
			AllowMsgSchedules: true,
		}}, historyShards()...),
		work:      jetstream.ConsumerConfig{Durable: "takeover-expire", FilterSubject: "langbot.takeover.expire.>", AckPolicy: jetstream.AckExplicitPolicy},
		workSubj:  "langbot.takeover.expire." + scope + ".c2lk",
		schedSubj: "langbot.takeover.timer." + scope + ".c2lk",
		objects:   "langbot_takeover_blobs",
		lookOnly:  []string{"LANGBOT_TAKEOVER_HISTORY"},
	},
	{
		name: "schenotify",
		buckets: []jetstream.KeyValueConfig{
			{Bucket: "langbot_schenotify", Storage: jetstream.FileStorage},
			{Bucket: "langbot_schenotify_dedupe", Storage: jetstream.FileStorage, TTL: 24 * time.Hour},
		},
		streams: []jetstream.StreamConfig{{
			Name:              "LANGBOT_SCHENOTIFY",
			Subjects:          []string{"langbot.schenotify.sched.>", "langbot.schenotify.due.>"},
			Storage:           jetstream.FileStorage,
			AllowMsgSchedules: true,
		}},
		work:      jetstream.ConsumerConfig{Durable: "schenotify-due", FilterSubject: "langbot.schenotify.due.>", AckPolicy: jetstream.AckExplicitPolicy},
		workSubj:  "langbot.schenotify.due." + scope + ".r1",
		schedSubj: "langbot.schenotify.sched." + scope + ".r1",
	},
}

// historyShards are takeover's 16 history streams, one per first hex digit
// of a session id (services/takeover HistoryStream).
func historyShards() []jetstream.StreamConfig {
	var out []jetstream.StreamConfig
	for k := range 16 {
		out = append(out, jetstream.StreamConfig{
			Name:              fmt.Sprintf("LANGBOT_TAKEOVER_HISTORY_%X", k),
			Subjects:          []string{fmt.Sprintf("langbot.takeover.history.*.*.*.%x.>", k)},
			Storage:           jetstream.FileStorage,
			MaxMsgsPerSubject: 2200,
			Duplicates:        2 * time.Minute,
			AllowDirect:       true,
		})
	}
	return out
}

// natsUsers are the users of accounts.conf and the environment variables
// holding their passwords.
var natsUsers = map[string]string{
	"host":        "HOST_PASSWORD",
	"githubkit":   "GITHUBKIT_PASSWORD",
	"takeover":    "TAKEOVER_PASSWORD",
	"schenotify":  "SCHENOTIFY_PASSWORD",
	"langbot_pkg": "LANGBOT_PKG_PASSWORD",
	"admin":       "ADMIN_PASSWORD",
	"sys":         "SYS_PASSWORD",
}

// TestPermissionMatrix starts an embedded NATS server with JetStream from the
// accounts file the manifests ship (taken from the rendered prod overlay's
// ConfigMap) and proves, with the operations the services and the host
// really perform, that each allowed operation works and each denied one is
// refused by the server with a permissions violation.
//
// It runs twice: with the acknowledgement and flow-control subjects the
// server uses today, and with their v2 form (feature flag js_ack_fc_v2),
// which a later server makes the default.
func TestPermissionMatrix(t *testing.T) {
	for _, v2 := range []bool{false, true} {
		name := "ack-v1"
		if v2 {
			name = "ack-v2"
		}
		t.Run(name, func(t *testing.T) {
			url, passwords, issuerSeed := startShippedNATS(t, map[string]bool{"js_ack_fc_v2": v2})
			permissionMatrix(t, url, passwords, issuerSeed)
		})
	}
}

func permissionMatrix(t *testing.T, url string, passwords map[string]string, issuerSeed string) {
	// A refused request gets no reply: bound every wait.
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	// As deployed: lbctl setup (user host) has created the tenant bucket and
	// the services answer the logins that are not the users of
	// accounts.conf (the auth callout); takeover's responder here. Without
	// any responder such a login waits for the server's auth timeout.
	setupHost := connectAs(t, url, "host", passwords["host"])
	if _, err := bus.EnsureTenantBucket(ctx, setupHost.js, 1); err != nil {
		t.Fatalf("host: tenant bucket: %v", err)
	}
	setupHost.noViolations(t)
	responder := connectAs(t, url, "takeover", passwords["takeover"])
	ac, err := bus.NewAuthCallout(bus.AuthCalloutConfig{Conn: responder.nc, IssuerSeed: issuerSeed, Account: "LANGBOT"})
	if err != nil {
		t.Fatal(err)
	}
	if err := ac.Start(ctx); err != nil {
		t.Fatalf("takeover: auth callout: %v", err)
	}
	defer func() { _ = ac.Stop(context.Background()) }()

	t.Run("unauthenticated", func(t *testing.T) {
		cases := []struct{ name, user, password string }{
			{"no credentials", "", ""},
			{"wrong password", "host", "wrong"},
			{"another user's password", "githubkit", passwords["takeover"]},
			{"unknown user", "nobody", passwords["host"]},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				opts := []nats.Option{nats.NoReconnect()}
				if c.user != "" {
					opts = append(opts, nats.UserInfo(c.user, c.password))
				}
				nc, err := nats.Connect(url, opts...)
				if err == nil {
					nc.Close()
					t.Fatalf("connect as %q: got a connection, want %v", c.user, nats.ErrAuthorization)
				}
				if !errors.Is(err, nats.ErrAuthorization) {
					t.Fatalf("connect as %q: got %v, want %v", c.user, err, nats.ErrAuthorization)
				}
			})
		}
	})

	host := connectAs(t, url, "host", passwords["host"])

	// The host serves host actions, as LangBot does.
	hostActions, err := host.nc.QueueSubscribe("langbot.host.>", "host", func(m *nats.Msg) {
		_ = m.Respond([]byte(`{}`))
	})
	if err != nil {
		t.Fatal(err)
	}
	defer hostActions.Unsubscribe()
	if err := host.nc.Flush(); err != nil {
		t.Fatal(err)
	}

	t.Run("host", func(t *testing.T) {
		// lbctl setup: the lifecycle stream, as DESIGN.md 3.2 defines it.
		lifecycle := jetstream.StreamConfig{
			Name:       "LANGBOT_LIFECYCLE",
			Subjects:   []string{"langbot.lifecycle.>"},
			Storage:    jetstream.FileStorage,
			Retention:  jetstream.LimitsPolicy,
			MaxAge:     7 * 24 * time.Hour,
			Duplicates: 2 * time.Minute,
		}
		if _, err := host.js.CreateOrUpdateStream(ctx, lifecycle); err != nil {
			t.Fatalf("create LANGBOT_LIFECYCLE: %v", err)
		}
		if _, err := host.js.CreateOrUpdateStream(ctx, lifecycle); err != nil {
			t.Fatalf("update LANGBOT_LIFECYCLE: %v", err)
		}
		if _, err := host.js.AccountInfo(ctx); err != nil {
			t.Fatalf("account info: %v", err)
		}
		for _, p := range plugins {
			subj := "langbot.lifecycle." + p.name + ".attach." + scope
			if _, err := host.js.Publish(ctx, subj, []byte(`{"enabled":true}`), jetstream.WithMsgID(p.name+"-attach-1")); err != nil {
				t.Fatalf("publish %s: %v", subj, err)
			}
		}
		host.noViolations(t)

		host.deniedSub(t, "langbot.plugin.>")
		host.deniedSub(t, "langbot.lifecycle.>")
		host.deniedSub(t, "langbot.githubkit.>")
		host.deniedPub(t, "langbot.githubkit.poll."+scope+".cmVwbw")
		host.deniedPub(t, "langbot.takeover.live."+scope)
		host.deniedPub(t, "$KV.langbot_takeover."+scope+".authority")
		host.deniedRequest(t, "$JS.API.STREAM.INFO.KV_langbot_githubkit", func(ctx context.Context) error {
			_, err := host.js.KeyValue(ctx, "langbot_githubkit")
			return err
		})
		host.deniedRequest(t, "$JS.API.STREAM.CREATE.SPY", func(ctx context.Context) error {
			_, err := host.js.CreateStream(ctx, jetstream.StreamConfig{Name: "SPY", Subjects: []string{"langbot.plugin.>"}})
			return err
		})
		host.deniedRequest(t, "$JS.API.STREAM.DELETE.LANGBOT_LIFECYCLE", func(ctx context.Context) error {
			return host.js.DeleteStream(ctx, "LANGBOT_LIFECYCLE")
		})
		host.deniedRequest(t, "$JS.API.CONSUMER.CREATE.LANGBOT_LIFECYCLE.spy.langbot.lifecycle.>", func(ctx context.Context) error {
			_, err := host.js.CreateOrUpdateConsumer(ctx, "LANGBOT_LIFECYCLE", jetstream.ConsumerConfig{Durable: "spy", FilterSubject: "langbot.lifecycle.>"})
			return err
		})
		host.forgetErrors(t)
	})

	for _, p := range plugins {
		t.Run(p.name, func(t *testing.T) {
			svc := connectAs(t, url, p.name, passwords[p.name])
			t.Run("allowed", func(t *testing.T) {
				exerciseService(t, host, svc, p)
			})
			t.Run("denied", func(t *testing.T) {
				denyService(t, svc, p)
			})
		})
	}

	t.Run("langbot_pkg", func(t *testing.T) {
		pkg := connectAs(t, url, "langbot_pkg", passwords["langbot_pkg"])
		svc := connectAs(t, url, "schenotify", passwords["schenotify"])
		t.Run("allowed", func(t *testing.T) {
			exercisePackage(t, pkg, svc)
		})
		t.Run("denied", func(t *testing.T) {
			denyPackage(t, pkg)
		})
	})

	t.Run("tenant", func(t *testing.T) {
		tenantMatrix(t, url, passwords)
	})

	t.Run("admin", func(t *testing.T) {
		admin := connectAs(t, url, "admin", passwords["admin"])
		// Operators read every stream (backups, inspection).
		for _, name := range []string{"LANGBOT_LIFECYCLE", "KV_langbot_githubkit", "LANGBOT_TAKEOVER_HISTORY_F", "OBJ_langbot_takeover_blobs", "KV_langbot_schenotify_dedupe"} {
			if _, err := admin.js.Stream(ctx, name); err != nil {
				t.Fatalf("admin: stream info %s: %v", name, err)
			}
		}
		kv, err := admin.js.KeyValue(ctx, "langbot_takeover")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kv.Get(ctx, scope+".authority"); err != nil {
			t.Fatalf("admin: get takeover authority: %v", err)
		}
		admin.noViolations(t)
	})
}

// sampleSubject is a subject of scope that filter takes: the scope in place
// of its first three wildcards (a sharded filter) or before its tail.
func sampleSubject(filter string) string {
	f := strings.TrimSuffix(filter, ">")
	if strings.Contains(f, "*.*.*.") {
		return strings.Replace(f, "*.*.*", scope, 1) + "c2lk"
	}
	return f + scope + ".c2lk"
}

// exerciseService performs, as the service user, every kind of operation the
// service performs, and fails on any error or permissions violation.
func exerciseService(t *testing.T, host, svc *client, p pluginSpec) {
	// A refused request gets no reply: bound every wait.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s as %s: %v", what, p.name, err)
		}
	}

	// Start-up: create or update its buckets, streams and object store.
	var kvs []jetstream.KeyValue
	for _, cfg := range p.buckets {
		_, err := svc.js.CreateOrUpdateKeyValue(ctx, cfg)
		must("create bucket "+cfg.Bucket, err)
		_, err = svc.js.CreateOrUpdateKeyValue(ctx, cfg)
		must("update bucket "+cfg.Bucket, err)
		kv, err := svc.js.KeyValue(ctx, cfg.Bucket)
		must("bind bucket "+cfg.Bucket, err)
		kvs = append(kvs, kv)
	}
	var streams []jetstream.Stream
	for _, cfg := range p.streams {
		_, err := svc.js.CreateOrUpdateStream(ctx, cfg)
		must("create stream "+cfg.Name, err)
		s, err := svc.js.CreateOrUpdateStream(ctx, cfg)
		must("update stream "+cfg.Name, err)
		streams = append(streams, s)
	}
	_, err := svc.js.AccountInfo(ctx)
	must("account info", err)

	// KV: CAS writes, reads (direct get), watches, deletes and purges.
	kv, dedupe := kvs[0], kvs[1]
	authKey := scope + ".authority"
	rev, err := kv.Create(ctx, authKey, []byte(`{"state":"active"}`))
	must("kv create", err)
	_, err = kv.Update(ctx, authKey, []byte(`{"state":"disabled"}`), rev)
	must("kv update", err)
	e, err := kv.Get(ctx, authKey)
	must("kv get", err)
	if string(e.Value()) != `{"state":"disabled"}` {
		t.Fatalf("kv get: got %s", e.Value())
	}
	w, err := kv.Watch(ctx, "*.*.*.authority")
	must("kv watch", err)
	waitWatchInitial(t, w, authKey)
	must("kv watch stop", w.Stop())
	lister, err := kv.ListKeys(ctx)
	must("kv list keys", err)
	keys := 0
	for range lister.Keys() {
		keys++
	}
	if keys != 1 {
		t.Fatalf("kv list keys: got %d keys, want 1", keys)
	}

	// The authority view's ordered consumer on the bucket's stream.
	oc, err := svc.js.OrderedConsumer(ctx, "KV_"+p.buckets[0].Bucket, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{"$KV." + p.buckets[0].Bucket + ".*.*.*.authority"},
		DeliverPolicy:  jetstream.DeliverLastPerSubjectPolicy,
	})
	must("ordered consumer", err)
	batch, err := oc.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	must("ordered consumer fetch", err)
	n := 0
	for range batch.Messages() {
		n++
	}
	must("ordered consumer fetch", batch.Error())
	if n != 1 {
		t.Fatalf("ordered consumer: got %d messages, want 1", n)
	}

	invKey := scope + ".inv.0123456789abcdef0123456789abcdef"
	drev, err := dedupe.Create(ctx, invKey, []byte(`{"state":"running"}`))
	must("dedupe create", err)
	_, err = dedupe.Update(ctx, invKey, []byte(`{"state":"done"}`), drev)
	must("dedupe update", err)
	_, err = dedupe.Get(ctx, invKey)
	must("dedupe get", err)
	scoped, err := dedupe.ListKeysFiltered(ctx, scope+".>")
	must("dedupe list scope", err)
	for range scoped.Keys() {
	}
	must("dedupe delete", dedupe.Delete(ctx, invKey))
	must("kv purge", kv.Purge(ctx, scope+".other"))
	must("kv purge deletes", dedupe.PurgeDeletes(ctx, jetstream.DeleteMarkersOlderThan(-1)))

	// Its stream: JetStream publish, a schedule, direct and plain gets,
	// message delete and subject purge.
	work := streams[0]
	if p.schedSubj != "" {
		sched := nats.NewMsg(p.schedSubj)
		sched.Header.Set("Nats-Schedule", "@at "+time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
		sched.Header.Set("Nats-Schedule-Target", p.workSubj)
		sched.Data = []byte(`{}`)
		_, err := svc.js.PublishMsg(ctx, sched)
		must("publish schedule "+p.schedSubj, err)
		must("purge schedule", work.Purge(ctx, jetstream.WithPurgeSubject(p.schedSubj)))
	}
	ack, err := svc.js.Publish(ctx, p.workSubj, []byte(`{}`))
	must("publish "+p.workSubj, err)
	_, err = work.GetMsg(ctx, ack.Sequence)
	must("get message", err)
	_, err = work.GetLastMsgForSubject(ctx, p.workSubj)
	must("get last message for subject", err)
	_, err = work.Info(ctx)
	must("stream info", err)

	// The durable pull consumer shared by the replicas: fetch and ack.
	cons, err := svc.js.CreateOrUpdateConsumer(ctx, work.CachedInfo().Config.Name, p.work)
	must("create consumer "+p.work.Durable, err)
	fetchAck(t, cons, p.name+" "+p.work.Durable)
	_, err = svc.js.Consumer(ctx, work.CachedInfo().Config.Name, p.work.Durable)
	must("consumer info", err)

	ack, err = svc.js.Publish(ctx, p.workSubj, []byte(`{}`))
	must("publish "+p.workSubj, err)
	must("delete message", work.DeleteMsg(ctx, ack.Sequence))
	must("purge subject", work.Purge(ctx, jetstream.WithPurgeSubject(p.workSubj)))

	// Streams it only looks up: absent here, and the answer says so.
	for _, name := range p.lookOnly {
		if _, err := svc.js.Stream(ctx, name); !errors.Is(err, jetstream.ErrStreamNotFound) {
			t.Fatalf("%s: look up stream %s: %v, want not found", p.name, name, err)
		}
	}

	// Every other stream it owns (takeover's history: direct gets).
	for _, s := range streams[1:] {
		subj := sampleSubject(s.CachedInfo().Config.Subjects[0])
		ack, err := svc.js.Publish(ctx, subj, []byte(`{}`), jetstream.WithMsgID("entry-1"))
		must("publish "+subj, err)
		_, err = s.GetMsg(ctx, ack.Sequence)
		must("direct get", err)
		_, err = s.GetLastMsgForSubject(ctx, subj)
		must("direct get last for subject", err)
		must("purge below sequence", s.Purge(ctx, jetstream.WithPurgeSubject(subj), jetstream.WithPurgeSequence(ack.Sequence)))
	}

	// Object store (takeover's blobs).
	if p.objects != "" {
		obs, err := svc.js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: p.objects, Storage: jetstream.FileStorage})
		must("create object store", err)
		// An attachment of the largest size (10 MiB): reading it back
		// needs flow control replies on the blob stream.
		name := scope + ".c2lk.e1.0"
		blob := make([]byte, 10<<20)
		if _, err := rand.Read(blob); err != nil {
			t.Fatal(err)
		}
		_, err = obs.PutBytes(ctx, name, blob)
		must("put object", err)
		got, err := obs.GetBytes(ctx, name)
		must("get object", err)
		if !bytes.Equal(got, blob) {
			t.Fatal("get object: bytes differ")
		}
		_, err = obs.List(ctx)
		must("list objects", err)
		must("delete object", obs.Delete(ctx, name))
	}

	// Its lifecycle consumer: the host's attach arrives and is acked.
	lc, err := svc.js.CreateOrUpdateConsumer(ctx, "LANGBOT_LIFECYCLE", jetstream.ConsumerConfig{
		Durable:       p.name + "-lifecycle",
		FilterSubject: "langbot.lifecycle." + p.name + ".>",
		AckPolicy:     jetstream.AckExplicitPolicy,
	})
	must("create lifecycle consumer", err)
	fetchAck(t, lc, p.name+"-lifecycle")
	_, err = svc.js.Consumer(ctx, "LANGBOT_LIFECYCLE", p.name+"-lifecycle")
	must("lifecycle consumer info", err)

	// Serve invocations with micro; the host invokes and discovers it.
	srv, err := micro.AddService(svc.nc, micro.Config{Name: p.name, Version: "1.0.0", QueueGroup: p.name})
	must("micro service", err)
	defer srv.Stop()
	group := srv.AddGroup("langbot.plugin." + p.name)
	for _, ep := range []string{"command", "event", "tool", "page"} {
		must("endpoint "+ep, group.AddEndpoint(ep, micro.HandlerFunc(func(r micro.Request) {
			_ = r.Respond([]byte(`{"ok":true}`))
		}), micro.WithEndpointSubject(ep+".*.*.*")))
	}
	// The server has the endpoints' subscriptions once the flush returns.
	must("flush", svc.nc.Flush())
	for _, ep := range []string{"command", "event", "tool", "page"} {
		subj := "langbot.plugin." + p.name + "." + ep + "." + scope
		reply, err := host.nc.RequestWithContext(ctx, subj, []byte(`{}`))
		if err != nil {
			t.Fatalf("host invokes %s: %v", subj, err)
		}
		if string(reply.Data) != `{"ok":true}` {
			t.Fatalf("host invokes %s: got %s", subj, reply.Data)
		}
	}
	for _, subj := range []string{"$SRV.PING", "$SRV.INFO." + p.name, "$SRV.STATS." + p.name} {
		if _, err := host.nc.RequestWithContext(ctx, subj, nil); err != nil {
			t.Fatalf("host discovers %s: %v", subj, err)
		}
	}

	// Host actions: the service requests, the host answers.
	reply, err := svc.nc.RequestWithContext(ctx, "langbot.host.send_message."+scope, []byte(`{}`))
	must("host action", err)
	if string(reply.Data) != `{}` {
		t.Fatalf("host action: got %s", reply.Data)
	}

	// Internal core subjects (takeover's live feed).
	live := "langbot." + p.name + ".live." + scope
	sub, err := svc.nc.SubscribeSync(live)
	must("subscribe "+live, err)
	must("publish "+live, svc.nc.Publish(live, []byte(`{}`)))
	_, err = sub.NextMsg(5 * time.Second)
	must("receive "+live, err)
	must("unsubscribe", sub.Unsubscribe())

	svc.noViolations(t)
	host.noViolations(t)
}

// denyService proves that the service user cannot act outside its plugin.
func denyService(t *testing.T, svc *client, p pluginSpec) {
	// Invoking plugins, its own included, and forging lifecycle messages.
	svc.deniedPub(t, "langbot.plugin."+p.name+".command."+scope)
	svc.deniedPub(t, "langbot.lifecycle."+p.name+".revoke."+scope)
	svc.deniedSub(t, "langbot.lifecycle.>")
	// Impersonating the host, or forging replies into other inboxes.
	svc.deniedSub(t, "langbot.host.>")
	svc.deniedPub(t, "_INBOX.forged")
	// Reading the replies meant for anyone else: the host's, another
	// service's, or the shared default inbox space.
	svc.deniedSub(t, "_INBOX.>")
	svc.deniedSub(t, "_INBOX_host.>")
	for _, other := range []string{"githubkit", "takeover", "schenotify"} {
		if other != p.name {
			svc.deniedSub(t, "_INBOX_"+other+".>")
		}
	}
	// The lifecycle stream beyond its own consumer.
	svc.deniedRequest(t, "$JS.API.CONSUMER.CREATE.LANGBOT_LIFECYCLE.spy.langbot.lifecycle."+p.name+".>", func(ctx context.Context) error {
		_, err := svc.js.CreateOrUpdateConsumer(ctx, "LANGBOT_LIFECYCLE", jetstream.ConsumerConfig{Durable: "spy", FilterSubject: "langbot.lifecycle." + p.name + ".>"})
		return err
	})
	svc.deniedRequest(t, "$JS.API.CONSUMER.CREATE.LANGBOT_LIFECYCLE."+p.name+"-lifecycle.langbot.lifecycle.>", func(ctx context.Context) error {
		_, err := svc.js.CreateOrUpdateConsumer(ctx, "LANGBOT_LIFECYCLE", jetstream.ConsumerConfig{Durable: p.name + "-lifecycle", FilterSubject: "langbot.lifecycle.>"})
		return err
	})
	svc.deniedRequest(t, "$JS.API.STREAM.DELETE.LANGBOT_LIFECYCLE", func(ctx context.Context) error {
		return svc.js.DeleteStream(ctx, "LANGBOT_LIFECYCLE")
	})
	// Its info: with a subjects filter it would list every installation of
	// every plugin (issue 19).
	svc.deniedRequest(t, "$JS.API.STREAM.INFO.LANGBOT_LIFECYCLE", func(ctx context.Context) error {
		_, err := svc.nc.RequestWithContext(ctx, "$JS.API.STREAM.INFO.LANGBOT_LIFECYCLE", []byte(`{"subjects_filter":"langbot.lifecycle.>"}`))
		return err
	})
	svc.deniedRequest(t, "$JS.API.STREAM.INFO.LANGBOT_LIFECYCLE", func(ctx context.Context) error {
		_, err := svc.js.Stream(ctx, "LANGBOT_LIFECYCLE")
		return err
	})
	svc.deniedRequest(t, "$JS.API.STREAM.MSG.GET.LANGBOT_LIFECYCLE", func(ctx context.Context) error {
		_, err := svc.nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET.LANGBOT_LIFECYCLE", []byte(`{"seq":1}`))
		return err
	})
	// Its own streams cannot be deleted.
	own := p.streams[0].Name
	svc.deniedRequest(t, "$JS.API.STREAM.DELETE."+own, func(ctx context.Context) error {
		return svc.js.DeleteStream(ctx, own)
	})
	for _, name := range p.lookOnly {
		svc.deniedRequest(t, "$JS.API.STREAM.CREATE."+name, func(ctx context.Context) error {
			_, err := svc.js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{"langbot." + p.name + ".legacy.>"}})
			return err
		})
	}
	// Streams that belong to nobody.
	svc.deniedRequest(t, "$JS.API.STREAM.CREATE.SPY", func(ctx context.Context) error {
		_, err := svc.js.CreateStream(ctx, jetstream.StreamConfig{Name: "SPY", Subjects: []string{"langbot.plugin.>"}})
		return err
	})

	for _, q := range plugins {
		if q.name == p.name {
			continue
		}
		// Another plugin's invocations and internal subjects.
		svc.deniedSub(t, "langbot.plugin."+q.name+".>")
		svc.deniedPub(t, "langbot.plugin."+q.name+".command."+scope)
		svc.deniedSub(t, "langbot."+q.name+".>")
		svc.deniedPub(t, q.workSubj)
		svc.deniedSub(t, "$SRV.PING."+q.name)
		svc.deniedPub(t, "$JS.ACK."+q.streams[0].Name+"."+q.work.Durable+".1.1.1.1.0")
		// Another plugin's buckets and streams.
		bucket := q.buckets[0].Bucket
		svc.deniedRequest(t, "$JS.API.STREAM.INFO.KV_"+bucket, func(ctx context.Context) error {
			_, err := svc.js.KeyValue(ctx, bucket)
			return err
		})
		svc.deniedRequest(t, "$JS.API.DIRECT.GET.KV_"+bucket+".$KV."+bucket+"."+scope+".authority", func(ctx context.Context) error {
			_, err := svc.nc.RequestWithContext(ctx, "$JS.API.DIRECT.GET.KV_"+bucket+".$KV."+bucket+"."+scope+".authority", nil)
			return err
		})
		svc.deniedPub(t, "$KV."+bucket+"."+scope+".authority")
		svc.deniedRequest(t, "$JS.API.CONSUMER.CREATE.KV_"+bucket+".spy.$KV."+bucket+".>", func(ctx context.Context) error {
			_, err := svc.js.CreateOrUpdateConsumer(ctx, "KV_"+bucket, jetstream.ConsumerConfig{Name: "spy", FilterSubject: "$KV." + bucket + ".>"})
			return err
		})
		stream := q.streams[0].Name
		svc.deniedRequest(t, "$JS.API.STREAM.INFO."+stream, func(ctx context.Context) error {
			_, err := svc.js.Stream(ctx, stream)
			return err
		})
		svc.deniedRequest(t, "$JS.API.STREAM.PURGE."+stream, func(ctx context.Context) error {
			_, err := svc.nc.RequestWithContext(ctx, "$JS.API.STREAM.PURGE."+stream, nil)
			return err
		})
		svc.deniedRequest(t, "$JS.API.CONSUMER.CREATE.LANGBOT_LIFECYCLE."+p.name+"-lifecycle.langbot.lifecycle."+q.name+".>", func(ctx context.Context) error {
			_, err := svc.js.CreateOrUpdateConsumer(ctx, "LANGBOT_LIFECYCLE", jetstream.ConsumerConfig{Durable: p.name + "-lifecycle", FilterSubject: "langbot.lifecycle." + q.name + ".>"})
			return err
		})
		if q.objects != "" {
			svc.deniedRequest(t, "$JS.API.STREAM.INFO.OBJ_"+q.objects, func(ctx context.Context) error {
				_, err := svc.js.ObjectStore(ctx, q.objects)
				return err
			})
			svc.deniedPub(t, "$O."+q.objects+".M.bmFtZQ")
		}
	}
}

// exercisePackage performs, as the LangBot packages' user, everything a
// package does (spec/langbot-packages.md 4-6): attach with a PubAck and its
// deduplication, one invocation per endpoint kind, and answering a host
// action a service sends. svc is a service user that answers and requests.
func exercisePackage(t *testing.T, pkg, svc *client) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s as langbot_pkg: %v", what, err)
		}
	}

	// attach: a JetStream publish acknowledged by LANGBOT_LIFECYCLE, the
	// same Nats-Msg-Id twice (a worker restart) stored once.
	attach := "langbot.lifecycle.schenotify.attach." + scope
	msgID := "schenotify." + scope + ".attach.1.3." + pkg.user // one per user: each runs it once
	first, err := pkg.js.Publish(ctx, attach, []byte(`{"enabled":true}`), jetstream.WithMsgID(msgID))
	must("publish attach", err)
	if first.Stream != "LANGBOT_LIFECYCLE" || first.Duplicate {
		t.Fatalf("attach: got PubAck %+v, want a new message in LANGBOT_LIFECYCLE", first)
	}
	again, err := pkg.js.Publish(ctx, attach, []byte(`{"enabled":true}`), jetstream.WithMsgID(msgID))
	must("publish attach again", err)
	if !again.Duplicate || again.Sequence != first.Sequence {
		t.Fatalf("attach again: got PubAck %+v, want the duplicate of sequence %d", again, first.Sequence)
	}

	// Invocations of each endpoint kind, answered by the service.
	for _, ep := range []string{"command", "event", "tool", "page"} {
		sub, err := svc.nc.QueueSubscribe("langbot.plugin.schenotify."+ep+".*.*.*", "schenotify", func(m *nats.Msg) {
			_ = m.Respond([]byte(`{"ep":"` + ep + `"}`))
		})
		must("serve "+ep, err)
		defer sub.Unsubscribe()
	}
	must("flush", svc.nc.Flush())
	for _, ep := range []string{"command", "event", "tool", "page"} {
		subj := "langbot.plugin.schenotify." + ep + "." + scope
		reply, err := pkg.nc.RequestWithContext(ctx, subj, []byte(`{}`))
		must("invoke "+subj, err)
		if want := `{"ep":"` + ep + `"}`; string(reply.Data) != want {
			t.Fatalf("invoke %s: got %s, want %s", subj, reply.Data, want)
		}
	}

	// Host actions of its installation, in the installation's queue group.
	// The host user of this test answers every host action too, so the
	// service collects all replies and looks for the package's.
	actions, err := pkg.nc.QueueSubscribe("langbot.host.*."+scope, "langbot_pkg."+scope, func(m *nats.Msg) {
		_ = m.Respond([]byte(`{"from":"package"}`))
	})
	must("serve host actions", err)
	defer actions.Unsubscribe()
	must("flush", pkg.nc.Flush())
	inbox := "_INBOX_schenotify.pkgtest"
	replies, err := svc.nc.SubscribeSync(inbox)
	must("subscribe "+inbox, err)
	defer replies.Unsubscribe()
	must("host action", svc.nc.PublishRequest("langbot.host.send_message."+scope, inbox, []byte(`{}`)))
	for {
		m, err := replies.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatalf("host action: no reply from the package: %v", err)
		}
		if string(m.Data) == `{"from":"package"}` {
			break
		}
	}

	pkg.noViolations(t)
	svc.noViolations(t)
}

// denyPackage proves that the packages' user is a host with less: no
// revoke, no JetStream API, no plugin internals, no other user's replies.
func denyPackage(t *testing.T, pkg *client) {
	// Revoking (an uninstall purges tenant data) and lifecycle subjects
	// outside attach of one scope.
	pkg.deniedPub(t, "langbot.lifecycle.schenotify.revoke."+scope)
	pkg.deniedPub(t, "langbot.lifecycle.schenotify.attach.inst-1.ws-1")
	pkg.deniedPub(t, "langbot.lifecycle.schenotify.other."+scope)
	// Subjects under langbot.plugin that are not one of the four endpoints.
	pkg.deniedPub(t, "langbot.plugin.schenotify.admin."+scope)
	pkg.deniedPub(t, "langbot.plugin.schenotify.command.inst-1.ws-1")
	// Serving plugins or reading the lifecycle.
	pkg.deniedSub(t, "langbot.plugin.>")
	pkg.deniedSub(t, "langbot.lifecycle.>")
	// Plugin internals: schedules, fired timers, live feeds, KV writes.
	for _, p := range plugins {
		pkg.deniedSub(t, "langbot."+p.name+".>")
		pkg.deniedPub(t, p.workSubj)
		pkg.deniedPub(t, p.schedSubj)
		pkg.deniedPub(t, "$KV."+p.buckets[0].Bucket+"."+scope+".authority")
		pkg.deniedSub(t, "_INBOX_"+p.name+".>")
	}
	pkg.deniedPub(t, "langbot.takeover.live."+scope)
	// Other users' replies and forged ones.
	pkg.deniedSub(t, "_INBOX.>")
	pkg.deniedSub(t, "_INBOX_host.>")
	pkg.deniedPub(t, "_INBOX_host.forged")
	pkg.deniedPub(t, "$SRV.PING")
	// No JetStream API at all: account info, stream listing and info, the
	// lifecycle stream's messages (attach bodies carry other installations'
	// config), consumers, KV, stream management.
	requests := []struct{ subject string }{
		{"$JS.API.INFO"},
		{"$JS.API.STREAM.NAMES"},
		{"$JS.API.STREAM.LIST"},
		{"$JS.API.STREAM.INFO.LANGBOT_LIFECYCLE"},
		{"$JS.API.STREAM.MSG.GET.LANGBOT_LIFECYCLE"},
		{"$JS.API.DIRECT.GET.LANGBOT_LIFECYCLE.langbot.lifecycle.githubkit.attach." + scope},
		{"$JS.API.STREAM.PURGE.LANGBOT_LIFECYCLE"},
		{"$JS.API.STREAM.DELETE.LANGBOT_LIFECYCLE"},
		{"$JS.API.STREAM.CREATE.SPY"},
		{"$JS.API.CONSUMER.CREATE.LANGBOT_LIFECYCLE.spy.langbot.lifecycle.>"},
		{"$JS.API.STREAM.INFO.KV_langbot_githubkit"},
		{"$JS.API.DIRECT.GET.KV_langbot_takeover.$KV.langbot_takeover." + scope + ".authority"},
	}
	for _, r := range requests {
		pkg.deniedRequest(t, r.subject, func(ctx context.Context) error {
			_, err := pkg.nc.RequestWithContext(ctx, r.subject, []byte(`{}`))
			return err
		})
	}
	// The same through the client's own calls, as a curious package would.
	pkg.deniedRequest(t, "$JS.API.INFO", func(ctx context.Context) error {
		_, err := pkg.js.AccountInfo(ctx)
		return err
	})
	pkg.deniedRequest(t, "$JS.API.STREAM.INFO.LANGBOT_LIFECYCLE", func(ctx context.Context) error {
		_, err := pkg.js.Stream(ctx, "LANGBOT_LIFECYCLE")
		return err
	})
	pkg.deniedRequest(t, "$JS.API.STREAM.INFO.KV_langbot_schenotify", func(ctx context.Context) error {
		_, err := pkg.js.KeyValue(ctx, "langbot_schenotify")
		return err
	})
}

// waitWatchInitial reads a watcher until its initial values are delivered
// and checks that key was among them.
func waitWatchInitial(t *testing.T, w jetstream.KeyWatcher, key string) {
	t.Helper()
	seen := false
	timeout := time.After(10 * time.Second)
	for {
		select {
		case e := <-w.Updates():
			if e == nil {
				if !seen {
					t.Fatalf("watch: initial values lack %s", key)
				}
				return
			}
			seen = seen || e.Key() == key
		case <-timeout:
			t.Fatal("watch: initial values not delivered")
		}
	}
}

// fetchAck fetches one message from a durable pull consumer, signals work in
// progress and acks it synchronously.
func fetchAck(t *testing.T, c jetstream.Consumer, what string) {
	t.Helper()
	batch, err := c.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatalf("%s: fetch: %v", what, err)
	}
	n := 0
	for m := range batch.Messages() {
		n++
		// Long work signals progress before its ack: more than the one
		// reply that allow_responses grants, so this needs the explicit
		// $JS.ACK grants.
		if err := m.InProgress(); err != nil {
			t.Fatalf("%s: in progress: %v", what, err)
		}
		if err := m.DoubleAck(t.Context()); err != nil {
			t.Fatalf("%s: ack: %v", what, err)
		}
	}
	if err := batch.Error(); err != nil {
		t.Fatalf("%s: fetch: %v", what, err)
	}
	if n != 1 {
		t.Fatalf("%s: fetched %d messages, want 1", what, n)
	}
}

// client is one authenticated connection that records the asynchronous
// errors the server sends it (permissions violations arrive that way).
type client struct {
	user string
	nc   *nats.Conn
	js   jetstream.JetStream

	mu   sync.Mutex
	errs []error
}

func connectAs(t *testing.T, url, user, password string) *client {
	t.Helper()
	c := &client{user: user}
	nc, err := nats.Connect(url,
		nats.UserInfo(user, password),
		// as pkg/bus.Connect does: each user reads only its own replies
		nats.CustomInboxPrefix("_INBOX_"+user),
		nats.Name("permission-test-"+user),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			c.mu.Lock()
			c.errs = append(c.errs, err)
			c.mu.Unlock()
		}))
	if err != nil {
		t.Fatalf("connect as %s: %v", user, err)
	}
	t.Cleanup(nc.Close)
	c.nc = nc
	if c.js, err = jetstream.New(nc); err != nil {
		t.Fatal(err)
	}
	return c
}

// noViolations fails if the server reported any error to this client.
func (c *client) noViolations(t *testing.T) {
	t.Helper()
	if err := c.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, err := range c.errs {
		t.Errorf("%s: unexpected asynchronous error: %v", c.user, err)
	}
	c.errs = nil
}

// forgetErrors drops the errors recorded so far, once the server has
// answered everything sent before.
func (c *client) forgetErrors(t *testing.T) {
	t.Helper()
	if err := c.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	c.errs = nil
	c.mu.Unlock()
}

// mark returns the position from which waitViolation looks.
func (c *client) mark() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.errs)
}

// waitViolation polls, until a deadline, for a permissions violation of the
// given kind ("Publish to" or "Subscription to") on subject, reported after
// position from.
func (c *client) waitViolation(kind, subject string, from int) bool {
	want := strings.ToLower(fmt.Sprintf("%s %q", kind, subject))
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		c.mu.Lock()
		for _, err := range c.errs[from:] {
			if errors.Is(err, nats.ErrPermissionViolation) && strings.Contains(strings.ToLower(err.Error()), want) {
				c.mu.Unlock()
				return true
			}
		}
		c.mu.Unlock()
		time.Sleep(5 * time.Millisecond) // polling interval, not synchronisation
	}
	return false
}

func (c *client) deniedPub(t *testing.T, subject string) {
	t.Helper()
	from := c.mark()
	if err := c.nc.Publish(subject, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if !c.waitViolation("Publish to", subject, from) {
		t.Errorf("%s: publish to %s was not refused", c.user, subject)
	}
}

func (c *client) deniedSub(t *testing.T, subject string) {
	t.Helper()
	from := c.mark()
	sub, err := c.nc.SubscribeSync(subject)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if !c.waitViolation("Subscription to", subject, from) {
		t.Errorf("%s: subscription to %s was not refused", c.user, subject)
	}
}

// deniedRequest runs op, a request the server must refuse on subject, and
// checks both the violation and that op failed.
func (c *client) deniedRequest(t *testing.T, subject string, op func(ctx context.Context) error) {
	t.Helper()
	from := c.mark()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- op(ctx) }()
	refused := c.waitViolation("Publish to", subject, from)
	cancel()
	err := <-done
	if !refused {
		t.Errorf("%s: request on %s was not refused (op returned %v)", c.user, subject, err)
	}
	if err == nil {
		t.Errorf("%s: request on %s succeeded", c.user, subject)
	}
}

// startShippedNATS starts an embedded server whose accounts come from the
// ConfigMap of the rendered prod overlay, with random passwords in the
// environment as the StatefulSet provides them, and the public key of a new
// auth callout issuer in AUTH_ISSUER. It returns the client URL, the
// passwords by user and the issuer's seed.
func startShippedNATS(t *testing.T, featureFlags map[string]bool) (string, map[string]string, string) {
	t.Helper()
	issuerSeed, err := bus.NewIssuerSeed()
	if err != nil {
		t.Fatal(err)
	}
	issuer, err := bus.IssuerPublicKey(issuerSeed)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("AUTH_ISSUER", issuer)
	m := render(t, "k8s/overlays/prod")
	cm := m.configMapByPrefix(t, "nats-config")
	accounts, ok := cm.Data["accounts.conf"]
	if !ok {
		t.Fatal("nats-config has no accounts.conf")
	}
	passwords := map[string]string{}
	for user, env := range natsUsers {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			t.Fatal(err)
		}
		passwords[user] = "pw" + hex.EncodeToString(b)
		t.Setenv(env, passwords[user])
	}

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "accounts.conf"), []byte(accounts), 0o600); err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf("jetstream {\n  store_dir: %q\n  sync_interval: always\n}\ninclude ./accounts.conf\n", filepath.Join(dir, "jetstream"))
	confPath := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(confPath)
	if err != nil {
		t.Fatalf("shipped accounts.conf: %v", err)
	}
	opts.Host, opts.Port = "127.0.0.1", server.RANDOM_PORT
	opts.NoLog, opts.NoSigs = true, true
	opts.FeatureFlags = featureFlags
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server not ready")
	}
	return s.ClientURL(), passwords, issuerSeed
}

// tenantMatrix proves the tenant credentials with the shipped accounts and
// the services' own auth callout responder (pkg/bus, started by
// permissionMatrix): a tenant of
// scope's instance and workspace does everything a package does there, is
// refused everything the legacy user is refused, and reaches no other
// tenant's invocations, attach, host actions, queue group or inbox; a
// wrong secret cannot log in.
func tenantMatrix(t *testing.T, url string, passwords map[string]string) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	// lbctl tenant issue (as admin).
	admin := connectAs(t, url, "admin", passwords["admin"])
	kv, err := admin.js.KeyValue(ctx, bus.TenantBucket)
	if err != nil {
		t.Fatal(err)
	}
	inst, ws, _ := strings.Cut(scope, ".")
	ws, _, _ = strings.Cut(ws, ".")
	mine, mySecret, err := bus.IssueTenant(ctx, kv, bus.IssueRequest{Instance: inst, Workspace: ws}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	other, otherSecret, err := bus.IssueTenant(ctx, kv, bus.IssueRequest{Instance: "inst-2"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}

	t.Run("login", func(t *testing.T) {
		for _, c := range []struct{ name, user, password string }{
			{"wrong secret", mine.Name, otherSecret},
			{"unknown tenant", "t-nobody", mySecret},
		} {
			if nc, err := nats.Connect(url, nats.UserInfo(c.user, c.password), nats.NoReconnect()); !errors.Is(err, nats.ErrAuthorization) {
				if err == nil {
					nc.Close()
				}
				t.Errorf("%s: got %v, want %v", c.name, err, nats.ErrAuthorization)
			}
		}
	})
	tenant := connectAs(t, url, mine.Name, mySecret)
	svc := connectAs(t, url, "schenotify", passwords["schenotify"])
	t.Run("allowed", func(t *testing.T) {
		exercisePackage(t, tenant, svc)
	})
	t.Run("denied", func(t *testing.T) {
		denyPackage(t, tenant)
		// Another tenant's installations (another instance), and another
		// workspace of its own instance.
		for _, sc := range []string{"inst-2.ws-1.inst-b", inst + ".ws-other.inst-c"} {
			for _, ep := range []string{"command", "event", "tool", "page"} {
				tenant.deniedPub(t, "langbot.plugin.schenotify."+ep+"."+sc)
			}
			tenant.deniedPub(t, "langbot.lifecycle.githubkit.attach."+sc)
			tenant.deniedSub(t, "langbot.host.send_message."+sc)
			// the other installation's queue group, whose name is predictable
			from := tenant.mark()
			qs, err := tenant.nc.QueueSubscribeSync("langbot.host.*."+sc, "schenotify-"+sc[strings.LastIndex(sc, ".")+1:])
			if err != nil {
				t.Fatal(err)
			}
			if !tenant.waitViolation("Subscription to", "langbot.host.*."+sc, from) {
				t.Errorf("%s: joined the queue group of %s", mine.Name, sc)
			}
			_ = qs.Unsubscribe()
		}
		tenant.deniedSub(t, "langbot.host.>")
		tenant.deniedSub(t, "langbot.host.*.*.*.*")
		tenant.deniedSub(t, "_INBOX_"+other.Name+".>")
		tenant.deniedSub(t, "_INBOX_langbot_pkg.>")
		tenant.deniedPub(t, bus.AuthCalloutSubject)
		tenant.deniedSub(t, bus.AuthCalloutSubject)
		tenant.deniedPub(t, "$KV."+bus.TenantBucket+"."+other.Name)
		tenant.deniedPub(t, "$SYS.REQ.SERVER.PING.CONNZ")
	})
}
