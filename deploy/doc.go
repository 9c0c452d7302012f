// Package deploy holds what runs the LangBot plugin services on Kubernetes,
// and the tests that prove it without a cluster.
//
// The manifests live in k8s/ as a kustomize base and two overlays (dev,
// prod); the NATS server configuration, accounts and permissions included,
// lives in k8s/base/nats/. The package has no code: its tests render every
// overlay with kustomize's Go API, decode every object strictly into the
// Kubernetes API types and check the deployment policy (manifests_test.go),
// and start an embedded NATS server from the shipped accounts file to prove
// the permission matrix with real operations (permissions_test.go).
//
// This is a separate module so that kustomize and the Kubernetes API types
// stay out of the services' dependency graph. It does not import the root
// module.
package deploy
