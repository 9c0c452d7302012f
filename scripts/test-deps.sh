#!/usr/bin/env bash
# Installs what the tests need besides Go: the one set-up step of the README,
# also run by .ci/run. Idempotent; a second run changes nothing and takes a
# second or two.
#
#  1. Debian's chromium (the takeover console's browser tests), openssl
#     (deploy/compose/gen-secrets.sh) and the pure-Python Debian packages
#     LangBot's plugin runtime needs
#     (pkg/lbpkg/runtimetest.DebianPackages), installed system-wide with
#     apt-get (root, or sudo).
#  2. For the real-LangBot test (pkg/lbpkg/reallangbot): the Debian packages
#     that boot LangBot 4.10.8 on Debian 12's CPython 3.11
#     (../shared/research/langbot-real.md), fetched with `apt-get download`
#     under an apt state directory of our own and unpacked with
#     `dpkg-deb -x` into LANGBOT_REAL_DEPS (default .data/langbot-deps).
#     Nothing of it is installed system-wide; the test puts that folder on
#     the path of its own virtual environment.
#
# Flags: --no-system skips step 1 (no root needed); --no-langbot skips step 2.
set -euo pipefail
cd "$(dirname "$0")/.."

system=1 langbot=1
for a in "$@"; do
  case "$a" in
    --no-system) system=0 ;;
    --no-langbot) langbot=0 ;;
    *) echo "usage: $0 [--no-system] [--no-langbot]" >&2; exit 2 ;;
  esac
done

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if [ $system = 1 ]; then
  need=()
  command -v chromium >/dev/null 2>&1 || need+=(chromium)
  # deploy/compose/gen-secrets.sh makes the auth callout's Ed25519 issuer key.
  command -v openssl >/dev/null 2>&1 || need+=(openssl)
  # Keep in step with pkg/lbpkg/runtimetest.DebianPackages.
  for p in python3-websockets python3-httpx python3-httpcore python3-h11 python3-anyio \
    python3-rfc3986 python3-aiofiles python3-packaging python3-watchdog python3-dotenv; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || need+=("$p")
  done
  if [ ${#need[@]} -gt 0 ]; then
    echo "test-deps: apt-get install ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    as_root apt-get update -qq
    as_root apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  fi
fi

[ $langbot = 1 ] || exit 0

# Debian 13 (trixie): architecture-independent packages whose versions
# LangBot needs (Debian 12's SQLAlchemy 1.4, quart 0.18, sqlmodel 0.0.8,
# alembic and websockets 10 are too old); they run on 3.11. websockets is
# built for 3.13, but its C speed-up is optional and 3.11 uses the Python
# code. The last four are the plugin runtime's own needs.
TRIXIE="python3-sqlalchemy python3-sqlmodel python3-alembic python3-mako python3-aiosqlite
python3-quart python3-hypercorn python3-h11 python3-h2 python3-hpack python3-hyperframe
python3-priority python3-wsproto python3-websockets python3-async-lru python3-aiofiles
python3-aioshutil python3-colorlog python3-jwt python3-openai python3-httpx python3-httpcore
python3-anyio python3-distro python3-tqdm python3-ollama python3-discord python3-websocket
python3-qrcode python3-python-socks
python3-rfc3986 python3-packaging python3-watchdog python3-dotenv"
# Debian 12 (bookworm): compiled modules, which must be CPython 3.11 builds,
# and the shared libraries Pillow loads (put on LD_LIBRARY_PATH by the test).
BOOKWORM="python3-aiohttp python3-multidict python3-yarl python3-frozenlist python3-aiosignal
python3-async-timeout python3-psutil python3-argon2 python3-greenlet python3-pil
python3-pycryptodome python3-asyncpg
libimagequant0 libraqm0 libwebpdemux2 libwebpmux3 libfribidi0 libopenjp2-7"

deps="${LANGBOT_REAL_DEPS:-.data/langbot-deps}"
mkdir -p "$deps"
deps="$(cd "$deps" && pwd)"
want="$(printf 'trixie: %s\nbookworm: %s\n' "$(echo $TRIXIE)" "$(echo $BOOKWORM)")"
if [ -f "$deps/READY" ] && [ "$(cat "$deps/READY")" = "$want" ]; then
  echo "test-deps: LangBot's Debian packages are ready in $deps"
  exit 0
fi

# The archive address is the machine's own (deb822 or one-line sources).
mirror="${DEBIAN_MIRROR:-}"
if [ -z "$mirror" ]; then
  mirror="$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '/^URIs:/{for(i=2;i<=NF;i++) print $i}' | grep -v security | head -1 || true)"
fi
if [ -z "$mirror" ]; then
  mirror="$(awk '$1=="deb"{for(i=2;i<=NF;i++) if ($i ~ /^https?:/) {print $i; exit}}' /etc/apt/sources.list 2>/dev/null | grep -v security | head -1 || true)"
fi
mirror="${mirror:-http://deb.debian.org/debian}"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

apt="$deps/apt"
rm -rf "$deps/root" "$deps/debs" "$deps/READY"
mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/sources.d" "$apt/prefs.d" "$deps/debs"
: >"$apt/status"
cat >"$apt/sources.list" <<SRC
deb [signed-by=$keyring] $mirror trixie main
deb [signed-by=$keyring] $mirror bookworm main
SRC
opts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o "Dir::Etc::SourceParts=$apt/sources.d"
  -o "Dir::Etc::Preferences=$apt/preferences" -o "Dir::Etc::PreferencesParts=$apt/prefs.d"
  -o "Dir::State::Lists=$apt/lists" -o "Dir::State::status=$apt/status"
  -o "Dir::Cache=$apt/cache" -o "Dir::Cache::archives=$apt/cache/archives"
  -o "Debug::NoLocking=1" -o "APT::Sandbox::User=$(id -un)"
  -o "Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false"
  -o "Acquire::IndexTargets::deb::DEP-11-icons::DefaultEnabled=false"
  -o "Acquire::IndexTargets::deb::DEP-11-icons-small::DefaultEnabled=false")
echo "test-deps: fetching LangBot's Debian packages from $mirror (trixie, bookworm) into $deps"
apt-get "${opts[@]}" -qq update
pkgs=()
for p in $TRIXIE; do pkgs+=("$p/trixie"); done
for p in $BOOKWORM; do pkgs+=("$p/bookworm"); done
(cd "$deps/debs" && apt-get "${opts[@]}" -qq download "${pkgs[@]}")
mkdir -p "$deps/root"
for f in "$deps/debs"/*.deb; do dpkg-deb -x "$f" "$deps/root"; done
printf '%s\n' "$want" >"$deps/READY"
echo "test-deps: $(ls "$deps/debs" | wc -l) packages unpacked into $deps/root"
