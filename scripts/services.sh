#!/usr/bin/env bash
# Makes MariaDB (127.0.0.1:3306, user root, empty password over TCP), Redis
# (127.0.0.1:6379) and stripe-mock (Stripe's API mock, http://127.0.0.1:12111, the payment
# tests' SEATFLOW_TEST_STRIPE_URL) available for the tests. Idempotent: does nothing when
# all three answer. Installs MariaDB and Redis with apt-get where missing and starts them by
# hand (no systemd here); must run as root when it has to. stripe-mock is installed with
# `go install` and runs as the caller, logging to /tmp/seatflow-stripe-mock.log. promtool
# (the prometheus package) is installed where missing.
set -euo pipefail

WAIT_SECONDS="${SEATFLOW_SERVICES_WAIT:-60}"

log() { echo "services: $*"; }
die() { echo "services: ERROR: $*" >&2; exit 1; }

redis_ok() {
	command -v redis-cli >/dev/null 2>&1 &&
		[ "$(timeout 3 redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null)" = "PONG" ]
}
mariadb_tcp_ok() {
	command -v mariadb >/dev/null 2>&1 &&
		timeout 5 mariadb -h127.0.0.1 -P3306 -uroot -e 'select 1' >/dev/null 2>&1
}
# A live (non-zombie) mariadbd/mysqld process; PID 1 here may not reap exited daemons.
mariadbd_running() {
	ps -eo stat=,comm= | awk '$1 !~ /^Z/ && ($2 == "mariadbd" || $2 == "mysqld") { found = 1 } END { exit !found }'
}
mariadb_socket_ok() {
	timeout 5 mariadb -uroot -e 'select 1' >/dev/null 2>&1
}

# --- stripe-mock ------------------------------------------------------------------
STRIPE_MOCK_VERSION=v0.203.0
STRIPE_MOCK_PORT=12111
# An authenticated GET that stripe-mock answers 200 (bash's /dev/tcp: no curl needed).
stripe_mock_ok() {
	timeout 3 bash -c "exec 3<>/dev/tcp/127.0.0.1/$STRIPE_MOCK_PORT &&
		printf 'GET /v1/charges HTTP/1.0\r\nAuthorization: Bearer sk_test_123\r\n\r\n' >&3 && head -c 64 <&3" \
		2>/dev/null | grep -q '^HTTP/1\.[01] 200'
}
if stripe_mock_ok; then
	log "stripe-mock already answers on 127.0.0.1:$STRIPE_MOCK_PORT"
else
	gobin="$(go env GOPATH)/bin"
	if [ ! -x "$gobin/stripe-mock" ]; then
		log "installing stripe-mock $STRIPE_MOCK_VERSION with go install"
		go install "github.com/stripe/stripe-mock@$STRIPE_MOCK_VERSION"
	fi
	log "starting stripe-mock on 127.0.0.1:$STRIPE_MOCK_PORT (log: /tmp/seatflow-stripe-mock.log)"
	# Loopback only, HTTPS too (it listens on every interface unless told otherwise).
	setsid "$gobin/stripe-mock" -http-addr "127.0.0.1:$STRIPE_MOCK_PORT" -https-addr "127.0.0.1:$((STRIPE_MOCK_PORT + 1))" \
		>>/tmp/seatflow-stripe-mock.log 2>&1 </dev/null &
	for _ in $(seq 1 "$WAIT_SECONDS"); do
		stripe_mock_ok && break
		sleep 1
	done
	stripe_mock_ok || die "stripe-mock does not answer on 127.0.0.1:$STRIPE_MOCK_PORT (see /tmp/seatflow-stripe-mock.log)"
	log "stripe-mock answers on 127.0.0.1:$STRIPE_MOCK_PORT"
fi

# promtool (Debian's prometheus package) checks the alert rules and the dashboard's
# expressions (deploy_test.go); the server it ships is not started.
if ! command -v promtool >/dev/null 2>&1; then
	[ "$(id -u)" = 0 ] || die "installing promtool (the prometheus package) needs root"
	log "installing promtool (prometheus) with apt-get"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update
	apt-get install -y --no-install-recommends prometheus
fi

if redis_ok && mariadb_tcp_ok; then
	log "Redis (127.0.0.1:6379) and MariaDB (127.0.0.1:3306) already answer; nothing to do"
	exit 0
fi

need_root() {
	[ "$(id -u)" = 0 ] || die "$1 needs root (run as root; there is no sudo here)"
}

# --- install what is missing -------------------------------------------------
missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v redis-cli >/dev/null 2>&1 || missing+=(redis-server)
[ -x /usr/sbin/mariadbd ] || missing+=(mariadb-server)
command -v mariadb >/dev/null 2>&1 || missing+=(mariadb-client)
if [ "${#missing[@]}" -gt 0 ]; then
	need_root "installing ${missing[*]}"
	log "installing redis-server mariadb-server mariadb-client with apt-get (missing: ${missing[*]})"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update
	apt-get install -y redis-server mariadb-server mariadb-client
fi

# --- Redis ---------------------------------------------------------------------
if redis_ok; then
	log "Redis already answers on 127.0.0.1:6379"
else
	log "starting redis-server on 127.0.0.1:6379"
	redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no
fi

# --- MariaDB -------------------------------------------------------------------
start_mariadb() {
	need_root "starting MariaDB"
	install -d -o mysql -g mysql /run/mysqld
	install -d -o mysql -g adm -m 2750 /var/log/mysql
	if [ -z "$(ls -A /var/lib/mysql 2>/dev/null)" ]; then
		log "datadir /var/lib/mysql is empty: running mariadb-install-db"
		install -d -o mysql -g mysql /var/lib/mysql
		mariadb-install-db --user=mysql --datadir=/var/lib/mysql >/dev/null
	fi
	log "starting mariadbd (log: /var/log/mysql/error.log)"
	start-stop-daemon --start --background --make-pidfile \
		--pidfile /run/mysqld/mariadbd.pid --chuid mysql \
		--exec /usr/sbin/mariadbd -- --log-error=/var/log/mysql/error.log
}
if mariadb_tcp_ok; then
	log "MariaDB already answers on 127.0.0.1:3306"
else
	started=no
	if mariadbd_running; then
		log "mariadbd is running (not reachable as root over TCP yet)"
	fi
	# Wait for the unix socket (starting mariadbd when no live one is left, e.g. one that was
	# still shutting down), then let root in over TCP with no password.
	for _ in $(seq 1 "$WAIT_SECONDS"); do
		if mariadb_socket_ok || mariadb_tcp_ok; then
			break
		fi
		if [ "$started" = no ] && ! mariadbd_running; then
			start_mariadb
			started=yes
		fi
		sleep 1
	done
	if ! mariadb_tcp_ok; then
		if mariadb_socket_ok; then
			log "granting root@127.0.0.1 access over TCP with an empty password"
			mariadb -uroot <<-'SQL'
				ALTER USER root@localhost IDENTIFIED VIA unix_socket OR mysql_native_password USING PASSWORD('');
				CREATE USER IF NOT EXISTS root@'127.0.0.1' IDENTIFIED BY '';
				GRANT ALL ON *.* TO root@'127.0.0.1' WITH GRANT OPTION;
				FLUSH PRIVILEGES;
			SQL
		else
			log "MariaDB does not answer on its unix socket yet"
		fi
	fi
fi

# --- wait until both answer ------------------------------------------------------
log "waiting up to ${WAIT_SECONDS}s for Redis and MariaDB"
deadline=$((SECONDS + WAIT_SECONDS))
until redis_ok && mariadb_tcp_ok; do
	if [ "$SECONDS" -ge "$deadline" ]; then
		redis_ok || echo "services: Redis does not answer PONG on 127.0.0.1:6379" >&2
		mariadb_tcp_ok || echo "services: MariaDB does not accept root on 127.0.0.1:3306 (see /var/log/mysql/error.log)" >&2
		die "services did not come up within ${WAIT_SECONDS}s"
	fi
	sleep 1
done
log "ready: Redis 127.0.0.1:6379, MariaDB 127.0.0.1:3306 (root, no password), stripe-mock 127.0.0.1:$STRIPE_MOCK_PORT"
