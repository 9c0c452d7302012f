// Package batch is takeover's group-commit publisher for its history
// streams: a Batcher sends each message on its own while the stream keeps
// up and gathers the ones that wait into JetStream atomic batches when it
// does not (see Batcher for why that bounds fsyncs per message).
//
// It may import the standard library, nats.go and nuid only: it knows nothing of
// scopes, records or the service, so it can be tested against a bare
// stream.
package batch
