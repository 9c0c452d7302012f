#!/bin/sh
# Generates the credentials and keys of the Compose deployment, once per
# host. Run it from anywhere before the first "docker compose up":
#
#   deploy/compose/gen-secrets.sh [SECRETS_DIR [ENV_FILE]]
#
# SECRETS_DIR (default: secrets/ next to this script) receives one file per
# Compose secret of compose.yaml. A file that exists and is not empty is
# kept: the state keys and the JetStream key encrypt data already stored,
# and a new NATS password would lock the services out until every side has
# it. Delete a file and rerun to rotate that one secret (docs/operations.md
# says what each rotation needs).
#
# ENV_FILE (default: .env next to compose.yaml) is written only if missing:
# LANGBOT_TZ from this host's zone and LANGBOT_NETWORK, LangBot's network.
#
# Nothing here prints a secret. Needs only od, dd, base64 and /dev/urandom.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
dir=${1:-$here/secrets}
envfile=${2:-$here/.env}

for tool in od dd base64 tr; do
  command -v "$tool" >/dev/null 2>&1 || { echo "gen-secrets: $tool is required" >&2; exit 1; }
done
[ -r /dev/urandom ] || { echo "gen-secrets: /dev/urandom is not readable" >&2; exit 1; }

# NATS config reads a password from the environment as config text, so it
# must start with a letter and hold only [A-Za-z0-9_-]: "p" and 48 hex digits
# (192 bits).
password() {
  printf 'p%s' "$(od -An -tx1 -N24 /dev/urandom | tr -d ' \n')"
}
# 32 random bytes in standard base64 (the state keys, the console key).
key32() {
  dd if=/dev/urandom bs=32 count=1 2>/dev/null | base64 | tr -d '\n'
}

umask 077
mkdir -p "$dir"
chmod 700 "$dir"

# name  kind
# The NATS passwords are one per user of deploy/k8s/base/nats/accounts.conf
# (file name: the lower-case name of its $..._PASSWORD variable); the
# compose test checks that this list, compose.yaml and accounts.conf agree.
secrets='
host_password         password
githubkit_password    password
takeover_password     password
schenotify_password   password
langbot_pkg_password  password
admin_password        password
jetstream_key         password
githubkit_state_key   statekey
takeover_state_key    statekey
schenotify_state_key  statekey
console_key           key
'

keyid="k$(date -u +%Y%m%d)"
echo "$secrets" | while read -r name kind; do
  [ -n "$name" ] || continue
  f="$dir/$name"
  if [ -s "$f" ]; then
    echo "kept  $f"
    continue
  fi
  case "$kind" in
    password) v=$(password) ;;
    statekey) v="$keyid=$(key32)" ;;
    key) v=$(key32) ;;
  esac
  printf '%s\n' "$v" > "$f.tmp"
  # Readable inside the containers, whose users are not the owner (the
  # plugin images run as uid 65532); the directory (0700) keeps other host
  # users out.
  chmod 644 "$f.tmp"
  mv "$f.tmp" "$f"
  echo "wrote $f"
done

if [ ! -e "$envfile" ]; then
  zone=${TZ:-}
  zone=${zone#:}
  if [ -z "$zone" ] && [ -r /etc/timezone ]; then
    zone=$(tr -d ' \n' < /etc/timezone)
  fi
  if [ -z "$zone" ] && [ -L /etc/localtime ]; then
    link=$(readlink /etc/localtime)
    case "$link" in
      *zoneinfo/*) zone=${link##*zoneinfo/} ;;
    esac
  fi
  [ -n "$zone" ] || zone=UTC
  umask 022
  cat > "$envfile" <<ENV
# Settings of the Compose deployment (docs/operations.md). Written once by
# gen-secrets.sh; edit freely.

# Time zone of every container: log times, and the default zone of
# schenotify installations that set none. An IANA name, e.g. Asia/Shanghai.
LANGBOT_TZ=$zone

# LangBot's Compose network: LangBot's docker/docker-compose.yaml started
# from its docker/ directory creates docker_langbot_network. Check with
#   docker network ls --filter name=langbot
LANGBOT_NETWORK=docker_langbot_network
ENV
  echo "wrote $envfile (LANGBOT_TZ=$zone)"
else
  echo "kept  $envfile"
fi
