#!/usr/bin/env bash
# Makes toxiproxy (Shopify's TCP fault proxy, API on 127.0.0.1:8474) available for the
# fault-injection suite (internal/tooling/faults, `make faults`). Idempotent: does nothing when the
# API answers. Installs the server with `go install` when missing (as
# $(go env GOPATH)/bin/toxiproxy-server) and starts it as the caller, logging to
# /tmp/seatflow-toxiproxy.log.
set -euo pipefail

TOXIPROXY_VERSION=v2.5.0
HOST=127.0.0.1
PORT="${SEATFLOW_TOXIPROXY_PORT:-8474}"
WAIT_SECONDS="${SEATFLOW_SERVICES_WAIT:-60}"

log() { echo "toxiproxy: $*"; }
die() { echo "toxiproxy: ERROR: $*" >&2; exit 1; }

# GET /version answers 200 (bash's /dev/tcp: no curl needed).
toxiproxy_ok() {
	timeout 3 bash -c "exec 3<>/dev/tcp/$HOST/$PORT &&
		printf 'GET /version HTTP/1.0\r\n\r\n' >&3 && head -c 64 <&3" \
		2>/dev/null | grep -q '^HTTP/1\.[01] 200'
}

if toxiproxy_ok; then
	log "already answers on $HOST:$PORT"
	exit 0
fi
gobin="$(go env GOPATH)/bin"
if [ ! -x "$gobin/toxiproxy-server" ]; then
	log "installing toxiproxy-server $TOXIPROXY_VERSION with go install"
	go install "github.com/Shopify/toxiproxy/v2/cmd/server@$TOXIPROXY_VERSION"
	cp "$gobin/server" "$gobin/toxiproxy-server"
fi
log "starting toxiproxy-server on $HOST:$PORT (log: /tmp/seatflow-toxiproxy.log)"
setsid "$gobin/toxiproxy-server" -host "$HOST" -port "$PORT" >>/tmp/seatflow-toxiproxy.log 2>&1 </dev/null &
for _ in $(seq 1 "$WAIT_SECONDS"); do
	toxiproxy_ok && break
	sleep 1
done
toxiproxy_ok || die "toxiproxy does not answer on $HOST:$PORT (see /tmp/seatflow-toxiproxy.log)"
log "answers on $HOST:$PORT"
