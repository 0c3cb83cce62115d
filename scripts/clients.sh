#!/usr/bin/env bash
# Runs the client-library tests (clients/: graphql-http's audit, graphql-ws,
# subscriptions-transport-ws, Apollo Client, urql, graphql-codegen, CORS) against a real
# server: it builds bin/seatflow, gives it a fresh MySQL database and Redis key prefix,
# migrates and seeds the demo catalog, starts `seatflow serve` on a free loopback port and
# runs `npm test` in clients/ with the server's address in SEATFLOW_URL. The server is
# stopped, the database dropped and the Redis keys deleted whatever happens.
#
#   scripts/clients.sh                        npm ci, build, run every test
#   scripts/clients.sh FILE...                only these test files (paths under clients/)
#   scripts/clients.sh --without-system-node  the same on the pinned Node.js (scripts/node.sh
#                                             --pinned), every other node, npm and npx hidden
#                                             from PATH, as on a machine with none or an old one
#
# Needs MariaDB on 127.0.0.1:3306 (root, no password) and Redis on 127.0.0.1:6379
# (`make services`), curl (the README's examples; installed with apt-get as root when
# missing) and Node.js 20.19 or newer with npm (scripts/node.sh: the system's when new
# enough, else a pinned build from the npm registry).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="/usr/local/go/bin:$PATH"

log() { echo "clients: $*"; }
die() { echo "clients: ERROR: $*" >&2; exit 1; }

without_system_node=no
if [ "${1:-}" = --without-system-node ]; then
	without_system_node=yes
	shift
fi

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT # until the cleanup below takes over
if [ "$without_system_node" = yes ]; then
	NODE_BIN="$(bash scripts/node.sh --pinned)"
	# Every other directory of PATH that holds a node, nodejs, npm, npx or corepack is
	# replaced by a copy of it (symbolic links) without them: /usr/bin holds much else.
	hidden=(node nodejs npm npx corepack)
	path="$NODE_BIN"
	i=0
	IFS=: read -r -a dirs <<<"$PATH"
	for d in "${dirs[@]}"; do
		[ -n "$d" ] && [ "$d" != "$NODE_BIN" ] || continue
		has=no
		for n in "${hidden[@]}"; do [ -e "$d/$n" ] && has=yes; done
		if [ "$has" = yes ]; then
			i=$((i + 1))
			mkdir -p "$WORK/path/$i"
			for f in "$d"/* "$d"/.[!.]*; do
				[ -e "$f" ] || continue
				case " ${hidden[*]} " in *" $(basename "$f") "*) continue ;; esac
				ln -s "$f" "$WORK/path/$i/"
			done
			d="$WORK/path/$i"
		fi
		path="$path:$d"
	done
	export PATH="$path"
	# The check that the system's Node.js cannot be used: the only node, npm and npx on
	# PATH are the pinned ones, and it is the one that runs (and runs child processes).
	IFS=: read -r -a dirs <<<"$PATH"
	for d in "${dirs[@]}"; do
		for n in "${hidden[@]}"; do
			if [ -e "$d/$n" ] && [ "$d" != "$NODE_BIN" ]; then die "$d/$n is still on PATH"; fi
		done
	done
	[ "$(command -v node)" = "$NODE_BIN/node" ] && [ "$(command -v npm)" = "$NODE_BIN/npm" ] ||
		die "node is $(command -v node), npm $(command -v npm): want the pinned ones in $NODE_BIN"
	expect_node="$(node -p 'process.execPath')"
	log "the system's Node.js is hidden: node is $expect_node $(node --version), npm $(npm --version)"
else
	NODE_BIN="$(bash scripts/node.sh)"
	export PATH="$NODE_BIN:$PATH"
fi

if ! command -v curl >/dev/null 2>&1; then
	if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
		die "curl is missing (the README's examples use it) and apt-get as root is not available"
	fi
	log "installing curl (the README's examples use it)"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq curl >/dev/null
fi

log "npm ci (versions from clients/package-lock.json)"
(cd clients && npm ci --no-audit --no-fund --loglevel=error >/dev/null)

log "schema lint (@graphql-eslint's schema-recommended rules)"
(cd clients && npm run --silent lint:schema)

log "building bin/seatflow"
go build -o bin/seatflow ./server
BIN="$PWD/bin/seatflow"

# Settings of the caller's environment never reach the server: it gets those below only.
for v in $(compgen -v SEATFLOW_); do unset "$v"; done

run_id="$(date +%s)_$$"
DB="seatflow_clients_$run_id"
PREFIX="sfclients$run_id"
SERVER_PID=""

cleanup() {
	status=$?
	if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
		kill -TERM "$SERVER_PID" 2>/dev/null || true
		for _ in $(seq 1 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.2; done
		kill -KILL "$SERVER_PID" 2>/dev/null || true
		wait "$SERVER_PID" 2>/dev/null || true
	fi
	if [ "$status" != 0 ] && [ -s "$WORK/server.log" ]; then
		echo "clients: the server's last log lines:" >&2
		tail -n 40 "$WORK/server.log" >&2
	fi
	mariadb -h127.0.0.1 -P3306 -uroot -e "DROP DATABASE IF EXISTS \`$DB\`" >/dev/null 2>&1 ||
		echo "clients: could not drop database $DB" >&2
	redis-cli -h 127.0.0.1 -p 6379 --scan --pattern "$PREFIX:*" 2>/dev/null |
		xargs -r -d "\n" -n 500 redis-cli -h 127.0.0.1 -p 6379 unlink >/dev/null 2>&1 || true
	rm -rf "$WORK"
	exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mariadb -h127.0.0.1 -P3306 -uroot -e "CREATE DATABASE \`$DB\`" ||
	die "cannot create database $DB on 127.0.0.1:3306 (make services starts MariaDB)"
[ "$(redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null)" = PONG ] ||
	die "Redis does not answer on 127.0.0.1:6379 (make services starts it)"

export SEATFLOW_MYSQL_DSN="root@tcp(127.0.0.1:3306)/$DB"
export SEATFLOW_REDIS_URL="redis://127.0.0.1:6379/0"
export SEATFLOW_REDIS_PREFIX="$PREFIX"
SEATFLOW_JWT_SECRET="$(node -p 'require("crypto").randomBytes(32).toString("hex")')"
export SEATFLOW_JWT_SECRET
SEATFLOW_TICKET_KEY_SECRET="$(node -p 'require("crypto").randomBytes(32).toString("hex")')"
export SEATFLOW_TICKET_KEY_SECRET
# A cinema far from UTC: the tests find "today" in the cinema's time zone, as a front end must.
export SEATFLOW_TIMEZONE=Pacific/Auckland
export SEATFLOW_PAYMENT_PROVIDER=test
# The origin the tests call from as a browser front end would (CORS, websocket origin check).
export SEATFLOW_ALLOWED_ORIGINS="https://tickets.seatflow.test"
export SEATFLOW_LOG_LEVEL=warn
# Every test client comes from one address, and the audit alone sends a hundred requests:
# the per-address cost budget is lifted (per-user hold limits stay on).
export SEATFLOW_COST_RESTORE=1000000000

log "migrating and seeding database $DB (Redis prefix $PREFIX)"
"$BIN" migrate >"$WORK/migrate.log" 2>&1 || { cat "$WORK/migrate.log" >&2; die "seatflow migrate failed"; }
"$BIN" seed-demo 2>&1 | tail -n 1

PORT="$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')"
export SEATFLOW_ADDR="127.0.0.1:$PORT"
"$BIN" serve >"$WORK/server.log" 2>&1 &
SERVER_PID=$!

BASE="http://127.0.0.1:$PORT"
ready=no
for _ in $(seq 1 150); do
	kill -0 "$SERVER_PID" 2>/dev/null || die "the server exited at start"
	if node -e 'fetch(process.argv[1]).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))' "$BASE/readyz"; then
		ready=yes
		break
	fi
	sleep 0.2
done
[ "$ready" = yes ] || die "the server is not ready on $BASE after 30s"
log "server ready on $BASE"

export SEATFLOW_URL="$BASE/query"
# test/node.test.js: the Node.js that must run the suite (only with --without-system-node).
if [ -n "${expect_node:-}" ]; then export SEATFLOW_EXPECT_NODE="$expect_node"; fi
export SEATFLOW_BIN="$BIN"
export SEATFLOW_TEST_ORIGIN="$SEATFLOW_ALLOWED_ORIGINS"
files=()
for f in "$@"; do files+=("${f#clients/}"); done
start=$SECONDS
(cd clients && node --test --test-concurrency=2 --test-reporter=spec "${files[@]:-test/}")
log "tests passed in $((SECONDS - start))s"
