#!/usr/bin/env bash
# Starts a local three-master Redis Cluster on 127.0.0.1:7101-7103 for `make test-cluster`,
# unless it is already up. Nothing is persisted; state lives in /tmp/seatflow-cluster.
# Stop it with: for p in 7101 7102 7103; do redis-cli -p $p shutdown nosave; done
set -euo pipefail

PORTS=(7101 7102 7103)
DIR=/tmp/seatflow-cluster
WAIT_SECONDS="${SEATFLOW_CLUSTER_WAIT:-30}"

log() { echo "redis-cluster: $*"; }
die() { echo "redis-cluster: ERROR: $*" >&2; exit 1; }

command -v redis-server >/dev/null 2>&1 || die "redis-server is missing (run scripts/services.sh first)"

cluster_ok() {
	local p
	for p in "${PORTS[@]}"; do
		timeout 3 redis-cli -h 127.0.0.1 -p "$p" cluster info 2>/dev/null | grep -q '^cluster_state:ok' || return 1
	done
}

if cluster_ok; then
	log "cluster already up on 127.0.0.1:${PORTS[0]}-${PORTS[-1]}; nothing to do"
	exit 0
fi

mkdir -p "$DIR"
fresh=no
for p in "${PORTS[@]}"; do
	if [ "$(timeout 3 redis-cli -h 127.0.0.1 -p "$p" ping 2>/dev/null)" = "PONG" ]; then
		log "node 127.0.0.1:$p already running"
		continue
	fi
	# A node that is not running starts with no cluster state of its own.
	rm -f "$DIR/nodes-$p.conf"
	log "starting node 127.0.0.1:$p"
	redis-server --cluster-enabled yes --daemonize yes --save '' --appendonly no \
		--bind 127.0.0.1 --port "$p" \
		--cluster-config-file "$DIR/nodes-$p.conf" --dir "$DIR" \
		--logfile "$DIR/redis-$p.log"
	fresh=yes
done

for _ in $(seq 1 "$WAIT_SECONDS"); do
	all=yes
	for p in "${PORTS[@]}"; do
		[ "$(timeout 3 redis-cli -h 127.0.0.1 -p "$p" ping 2>/dev/null)" = "PONG" ] || all=no
	done
	[ "$all" = yes ] && break
	sleep 1
done

# Create the cluster unless the nodes already know each other (state not ok only while converging).
known=$(timeout 3 redis-cli -h 127.0.0.1 -p "${PORTS[0]}" cluster info 2>/dev/null | sed -n 's/^cluster_known_nodes:\([0-9]*\).*/\1/p')
if [ "$fresh" = yes ] || [ "${known:-0}" -lt "${#PORTS[@]}" ]; then
	if [ "${known:-0}" -gt 1 ]; then
		die "nodes on ports ${PORTS[*]} are in a partial cluster; stop them (redis-cli -p P shutdown nosave) and rerun"
	fi
	log "creating the cluster (3 masters, no replicas)"
	addrs=()
	for p in "${PORTS[@]}"; do addrs+=("127.0.0.1:$p"); done
	redis-cli --cluster create "${addrs[@]}" --cluster-replicas 0 --cluster-yes
fi

log "waiting up to ${WAIT_SECONDS}s for cluster_state:ok"
deadline=$((SECONDS + WAIT_SECONDS))
until cluster_ok; do
	[ "$SECONDS" -lt "$deadline" ] || die "cluster on ports ${PORTS[*]} did not reach cluster_state:ok within ${WAIT_SECONDS}s (logs in $DIR)"
	sleep 1
done
log "ready: 127.0.0.1:${PORTS[0]},127.0.0.1:${PORTS[1]},127.0.0.1:${PORTS[2]}"
