// Package deploy holds what runs the LangBot plugin services on Kubernetes
// and on one host with Docker Compose, and the tests that prove both
// without a cluster or a Docker daemon.
//
// The Compose deployment lives in compose/: compose.yaml, a single-node
// nats.conf that includes the Kubernetes accounts file (one source of users
// and permissions), and gen-secrets.sh, which writes the credentials and
// keys on the operator's host. compose_test.go loads it with the Compose
// specification's Go library (compose-go), checks the deployment policy
// (pinned images, health checks, restart policies, secrets as files, TZ),
// shows each rule failing on an injected fault, and starts an embedded NATS
// server from its nats.conf with generated secrets.
//
// The manifests live in k8s/ as a kustomize base and two overlays (dev,
// prod); the NATS server configuration, accounts and permissions included,
// lives in k8s/base/nats/. The package has no code: its tests render every
// overlay with kustomize's Go API, decode every object strictly into the
// Kubernetes API types and check the deployment policy (manifests_test.go),
// and start an embedded NATS server from the shipped accounts file to prove
// the permission matrix with real operations (permissions_test.go).
//
// This is a separate module so that kustomize, compose-go and the
// Kubernetes API types stay out of the services' dependency graph. It does
// not import the root module.
package deploy
