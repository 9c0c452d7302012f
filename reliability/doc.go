// Package reliability holds the cross-service reliability and security tests
// of the project (issue 9): the three services run together, in one process
// against embedded NATS servers (pkg/bus/bustest) or as separate processes
// built from their cmd packages, and are driven exactly as the host drives
// them (bus.Invoker, lifecycle publishes, a fake host answering host actions).
//
// The package has no exported API; everything is in its tests:
//
//   - isolation_test.go: a model-based test (pgregory.net/rapid) that runs
//     random commands, events, tools, page calls, attaches and revokes across
//     many installations and checks after every step that no installation
//     observes or changes another's state;
//   - badinput_test.go: oversize bodies, invalid UTF-8 and malformed
//     envelopes at every endpoint of every service change nothing;
//   - process_test.go: kill -9 of one of two replicas of each service under
//     load, with host-side retries under the same invocation id;
//   - restart_test.go, cluster_test.go, github_test.go, host_test.go: the
//     NATS server restarting, stream and bucket leaders stopping in a
//     three-node cluster, a misbehaving GitHub, a host refusing sends.
//
// docs/reliability.md lists what is promised, which test proves it, and the
// figures of the last run. Long runs are behind LANGBOT_SOAK=1.
package reliability
