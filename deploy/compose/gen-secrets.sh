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
# It also makes the auth callout's issuer key pair (auth_issuer_seed for the
# services, its public key auth_issuer for NATS) with openssl (1.1.1 or
# later, for Ed25519) and base32, and the first tenant credential's secret
# (tenant_first_secret): "lbctl setup" issues the tenant t-first with it,
# and the first LangBot package that logs in with it binds it to its
# instance.
#
# Nothing here prints a secret. Needs od, dd, base64, base32, openssl and
# /dev/urandom.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
dir=${1:-$here/secrets}
envfile=${2:-$here/.env}

for tool in od dd base64 base32 tr openssl; do
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

# nkey PREFIX... < 32 raw bytes: the NATS nkey text of the bytes after the
# prefix bytes (decimal): base32 without padding, with the CRC-16/XMODEM
# of everything before it, little-endian (github.com/nats-io/nkeys).
nkey() {
  bytes="$* $(od -An -v -tu1)"
  crc=0
  for b in $bytes; do
    crc=$(( crc ^ (b << 8) ))
    i=0
    while [ "$i" -lt 8 ]; do
      if [ $(( crc & 32768 )) -ne 0 ]; then
        crc=$(( ((crc << 1) ^ 4129) & 65535 ))
      else
        crc=$(( (crc << 1) & 65535 ))
      fi
      i=$(( i + 1 ))
    done
  done
  for b in $bytes $(( crc & 255 )) $(( crc >> 8 )); do
    # shellcheck disable=SC2059 # the format is the byte's octal escape
    printf "\\$(printf '%03o' "$b")"
  done | base32 | tr -d '=\n'
}

# issuer_pair SEED_FILE PUBLIC_FILE: a new account nkey (Ed25519): its seed
# ("SA...", prefix bytes 144 0) and its public key ("A...", prefix 0).
issuer_pair() {
  der="$dir/.issuer.der.tmp"
  openssl genpkey -algorithm ed25519 -outform DER -out "$der" 2>/dev/null ||
    { rm -f "$der"; echo "gen-secrets: openssl cannot make Ed25519 keys (1.1.1 or later needed)" >&2; exit 1; }
  # PKCS#8 ends with the 32-byte seed, SubjectPublicKeyInfo with the key.
  tail -c 32 "$der" | nkey 144 0 > "$1.tmp"
  openssl pkey -inform DER -in "$der" -pubout -outform DER | tail -c 32 | nkey 0 > "$2.tmp"
  rm -f "$der"
  printf '\n' >> "$1.tmp"
  printf '\n' >> "$2.tmp"
  chmod 644 "$1.tmp" "$2.tmp"
  mv "$1.tmp" "$1"
  mv "$2.tmp" "$2"
}

umask 077
mkdir -p "$dir"
chmod 700 "$dir"

# The issuer key pair: both files or neither (a new pair invalidates no
# stored data, but NATS and the services must use the same one).
if [ -s "$dir/auth_issuer_seed" ] && [ -s "$dir/auth_issuer" ]; then
  echo "kept  $dir/auth_issuer_seed, $dir/auth_issuer"
elif [ -e "$dir/auth_issuer_seed" ] || [ -e "$dir/auth_issuer" ]; then
  echo "gen-secrets: only one of auth_issuer_seed and auth_issuer exists; delete both to make a new pair" >&2
  exit 1
else
  issuer_pair "$dir/auth_issuer_seed" "$dir/auth_issuer"
  echo "wrote $dir/auth_issuer_seed, $dir/auth_issuer"
fi

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
sys_password          password
jetstream_key         password
githubkit_state_key   statekey
takeover_state_key    statekey
schenotify_state_key  statekey
console_key           key
tenant_first_secret   tenant
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
    # a tenant secret as lbctl makes them: "s" and 64 hex digits
    tenant) v="s$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')" ;;
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

cat <<DONE

LangBot plugin forms (GitHubKit, HumanTakeover, ScheNotify), once the
deployment is up: nats_url nats://langbot-nats:4222, nats_user t-first,
nats_password the content of $dir/tenant_first_secret.
The first LangBot instance that logs in with it owns it; for another
instance or workspace: lbctl tenant issue (docs/operations.md).
DONE
