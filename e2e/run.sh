#!/usr/bin/env bash
# End-to-end run (make e2e; .ci/run calls it after make test).
#
# Builds, once and cached across runs, a nats-server binary from the root
# module's pinned github.com/nats-io/nats-server/v2 and Jaeger v2
# (github.com/jaegertracing/jaeger cmd/jaeger, pinned in the separate module
# e2e/tools so its dependencies never enter the root go.mod); builds lbctl
# and the service binaries that exist (always: their sources change, and
# Go's build cache makes an unchanged rebuild a matter of seconds); then runs
# the e2e test package, which starts everything as separate processes on
# loopback and drives it with lbctl as the host.
#
# Environment:
#   E2E_CACHE      cache directory (default ${XDG_CACHE_HOME:-$HOME/.cache}/langbot-e2e)
#   E2E_OUT        where logs, printed traces and the bench table go
#                  (default $E2E_CACHE/runs/<UTC time>; the last 5 runs are kept)
#   E2E_BENCH_N    operations per bench measurement (default 2000)
#   E2E_TESTFLAGS  extra go test flags, e.g. -run 'TestEndToEnd/schenotify'
set -euo pipefail
cd "$(dirname "$0")/.."

cache="${E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/langbot-e2e}"
mkdir -p "$cache"
gover=$(go env GOVERSION)
now() { date +%s; }
key() { { echo "$gover"; cat "$@"; } | sha256sum | cut -c1-16; }
t_all=$(now)

# nats-server, keyed by the Go version and the root go.sum.
nats_dir="$cache/nats-server-$(key go.sum)"
if [ ! -x "$nats_dir/nats-server" ]; then
  echo "== e2e: building nats-server (github.com/nats-io/nats-server/v2 from go.mod)"
  t=$(now)
  mkdir -p "$nats_dir"
  go build -trimpath -o "$nats_dir/nats-server.tmp" github.com/nats-io/nats-server/v2
  mv "$nats_dir/nats-server.tmp" "$nats_dir/nats-server"
  echo "== e2e: nats-server built in $(( $(now) - t )) s"
else
  echo "== e2e: nats-server cached ($nats_dir)"
fi

# Jaeger, keyed by the Go version and the tools module's go.mod and go.sum.
jaeger_dir="$cache/jaeger-$(key e2e/tools/go.mod e2e/tools/go.sum)"
if [ ! -x "$jaeger_dir/jaeger" ]; then
  echo "== e2e: building Jaeger (github.com/jaegertracing/jaeger/cmd/jaeger from e2e/tools; the first build takes minutes)"
  t=$(now)
  mkdir -p "$jaeger_dir"
  (cd e2e/tools && go build -trimpath -o "$jaeger_dir/jaeger.tmp" github.com/jaegertracing/jaeger/cmd/jaeger)
  mv "$jaeger_dir/jaeger.tmp" "$jaeger_dir/jaeger"
  echo "== e2e: Jaeger built in $(( $(now) - t )) s"
else
  echo "== e2e: Jaeger cached ($jaeger_dir)"
fi

# lbctl and the services.
bin="$cache/bin"
mkdir -p "$bin"
t=$(now)
go build -o "$bin/lbctl" ./cmd/lbctl
for s in githubkit takeover schenotify; do
  if [ -d "services/$s/cmd/$s" ]; then
    go build -o "$bin/$s" "./services/$s/cmd/$s"
  else
    rm -f "$bin/$s"
    echo "== e2e: SKIP $s: services/$s/cmd/$s does not exist yet"
  fi
done
echo "== e2e: lbctl and services built in $(( $(now) - t )) s"

out="${E2E_OUT:-$cache/runs/$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$out"
if [ -z "${E2E_OUT:-}" ]; then
  # keep the last five runs
  ls -1d "$cache"/runs/*/ 2>/dev/null | sort | head -n -5 | xargs -r rm -rf
fi

echo "== e2e: running (artefacts in $out)"
t=$(now)
status=0
# shellcheck disable=SC2086
E2E_BIN="$bin" E2E_NATS_SERVER="$nats_dir/nats-server" E2E_JAEGER="$jaeger_dir/jaeger" E2E_OUT="$out" \
  go test -tags e2e -count=1 -v -timeout 20m ${E2E_TESTFLAGS:-} ./e2e || status=$?
echo "== e2e: test run $(( $(now) - t )) s, make e2e total $(( $(now) - t_all )) s, exit $status"
exit $status
