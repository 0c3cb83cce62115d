#!/usr/bin/env bash
# Runs SeatFlow as several instances (default 3, on 127.0.0.1:8081-8083) against one MySQL
# database and one Redis, with one shared JWT secret: what a load balancer would sit in
# front of. Pids and logs in /tmp/seatflow-cluster-up/.
#
#   scripts/cluster-up.sh              build bin/seatflow, start what is not running
#   scripts/cluster-up.sh --no-build   same without building (restarts killed instances)
#   scripts/cluster-up.sh down         stop the instances and the private redis-server
#
# Redis: by default a PRIVATE redis-server on 127.0.0.1:6391 (no persistence), started
# here and stopped by `down`, so it can be restarted by chaos tests without touching the
# shared Redis on 6379 (never flushed, never restarted by this script). Set
# SEATFLOW_REDIS_URL to use another Redis instead (then it is neither started nor stopped).
#
# Environment: CLUSTER_PORTS (default "8081 8082 8083"), CLUSTER_REDIS_PORT (6391),
# SEATFLOW_MYSQL_DSN (root@tcp(127.0.0.1:3306)/seatflow_load; the database is created if
# missing), SEATFLOW_REDIS_PREFIX (sfload), SEATFLOW_JWT_SECRET (the load test's default),
# SEATFLOW_PAYMENT_PROVIDER (test), any other SEATFLOW_* setting is passed to every instance.
# `go run ./server load -start=false` runs the load test against this cluster.
set -euo pipefail

cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

DIR=/tmp/seatflow-cluster-up
BIN=bin/seatflow
PORTS=(${CLUSTER_PORTS:-8081 8082 8083})
REDIS_PORT="${CLUSTER_REDIS_PORT:-6391}"
PRIVATE_REDIS=yes
if [ -n "${SEATFLOW_REDIS_URL:-}" ]; then PRIVATE_REDIS=no; fi
export SEATFLOW_MYSQL_DSN="${SEATFLOW_MYSQL_DSN:-root@tcp(127.0.0.1:3306)/seatflow_load}"
export SEATFLOW_REDIS_URL="${SEATFLOW_REDIS_URL:-redis://127.0.0.1:${REDIS_PORT}/0}"
export SEATFLOW_REDIS_PREFIX="${SEATFLOW_REDIS_PREFIX:-sfload}"
export SEATFLOW_JWT_SECRET="${SEATFLOW_JWT_SECRET:-seatflow-load-test-shared-secret}"
export SEATFLOW_TICKET_KEY_SECRET="${SEATFLOW_TICKET_KEY_SECRET:-seatflow-load-test-shared-ticket-key-secret}"
export SEATFLOW_LOG_LEVEL="${SEATFLOW_LOG_LEVEL:-warn}"
# The load test pays with payOrder, which only the test provider accepts.
export SEATFLOW_PAYMENT_PROVIDER="${SEATFLOW_PAYMENT_PROVIDER:-test}"
# Every load-test client comes from one address: per-address limits off.
export SEATFLOW_COST_RESTORE="${SEATFLOW_COST_RESTORE:-1000000000}"
export SEATFLOW_WS_MAX_CONNS_PER_CLIENT="${SEATFLOW_WS_MAX_CONNS_PER_CLIENT:-0}"
export SEATFLOW_WS_MAX_CONNS_PER_SESSION="${SEATFLOW_WS_MAX_CONNS_PER_SESSION:-0}"

log() { echo "cluster-up: $*"; }
die() { echo "cluster-up: ERROR: $*" >&2; exit 1; }

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

down() {
	for i in "${!PORTS[@]}"; do
		pidf="$DIR/app-$((i + 1)).pid"
		if alive "$pidf"; then
			pid="$(cat "$pidf")"
			log "stopping instance $((i + 1)) (pid $pid, port ${PORTS[$i]})"
			kill -TERM "$pid" 2>/dev/null || true
			for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
			kill -KILL "$pid" 2>/dev/null || true
		fi
		rm -f "$pidf"
	done
	if [ -f "$DIR/redis.started" ]; then
		port="$(cat "$DIR/redis.started")"
		if [ "$port" != 6379 ]; then
			log "stopping the private redis-server on $port"
			redis-cli -h 127.0.0.1 -p "$port" shutdown nosave >/dev/null 2>&1 || true
		fi
		rm -f "$DIR/redis.started"
	fi
	log "down"
}

case "${1:-up}" in
down | stop) down; exit 0 ;;
up | --no-build) ;;
*) die "usage: $0 [--no-build | down]" ;;
esac

mkdir -p "$DIR"
[ "$REDIS_PORT" != 6379 ] || die "CLUSTER_REDIS_PORT must not be 6379 (the shared Redis)"

if [ "${1:-up}" != --no-build ] || [ ! -x "$BIN" ]; then
	log "building $BIN"
	CGO_ENABLED=0 go build -trimpath -o "$BIN" ./server
fi

# MySQL: the database must exist (the instances migrate the schema at start).
dsn_db="$(sed -E 's#^.*/([^/?]+)(\?.*)?$#\1#' <<<"$SEATFLOW_MYSQL_DSN")"
mariadb -h127.0.0.1 -P3306 -uroot -e "CREATE DATABASE IF NOT EXISTS \`$dsn_db\`" ||
	die "cannot create database $dsn_db on 127.0.0.1:3306 (run make services)"

if [ "$PRIVATE_REDIS" = yes ]; then
	if [ "$(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null)" != PONG ]; then
		log "starting a private redis-server on 127.0.0.1:$REDIS_PORT (no persistence)"
		redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no --daemonize yes \
			--pidfile "$DIR/redis.pid" --logfile "$DIR/redis.log" --maxclients 10000
		for _ in $(seq 1 50); do
			[ "$(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null)" = PONG ] && break
			sleep 0.1
		done
		echo "$REDIS_PORT" >"$DIR/redis.started"
	fi
fi

started=()
for i in "${!PORTS[@]}"; do
	n=$((i + 1))
	port="${PORTS[$i]}"
	pidf="$DIR/app-$n.pid"
	if alive "$pidf"; then
		continue
	fi
	if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
		die "port $port is in use by something else"
	fi
	log "starting instance $n on 127.0.0.1:$port (log $DIR/app-$n.log)"
	SEATFLOW_ADDR="127.0.0.1:$port" setsid "$BIN" serve >>"$DIR/app-$n.log" 2>&1 </dev/null &
	echo $! >"$pidf"
	started+=("$port")
done

for port in "${started[@]}"; do
	for _ in $(seq 1 300); do
		if curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1; then break; fi
		sleep 0.2
	done
	curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 || die "instance on $port is not ready (see $DIR)"
done
log "up: ${PORTS[*]/#/127.0.0.1:} on $SEATFLOW_MYSQL_DSN and $SEATFLOW_REDIS_URL (prefix $SEATFLOW_REDIS_PREFIX)"
