#!/usr/bin/env bash
# Starts a local three-master Redis Cluster on 127.0.0.1:7101-7103 for `make test-cluster`,
# unless it is already up. Nothing is persisted; state lives in /tmp/seatflow-cluster.
# Stop it with: for p in 7101 7102 7103; do redis-cli -p $p shutdown nosave; done
#
# `redis-cluster.sh failover` starts instead the cluster of the fault-injection suite's
# failover scenario (internal/tooling/faults): 3 masters + 3 replicas on 127.0.0.1:7201-7206, a
# 2 s node timeout so a replica takes over quickly, state in /tmp/seatflow-cluster-failover.
# The scenario kills a master and starts it again (it rejoins as a replica): a node that is
# not running keeps its cluster state here, so it rejoins instead of starting blank.
set -euo pipefail

PORTS=(7101 7102 7103)
DIR=/tmp/seatflow-cluster
REPLICAS=0
EXTRA=()
if [ "${1:-}" = failover ]; then
	PORTS=(7201 7202 7203 7204 7205 7206)
	DIR=/tmp/seatflow-cluster-failover
	REPLICAS=1
	EXTRA=(--cluster-node-timeout 2000)
elif [ -n "${1:-}" ]; then
	echo "usage: $0 [failover]" >&2
	exit 2
fi
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
	# A node that is not running starts with no cluster state of its own (except in
	# failover mode: see above).
	[ "$REPLICAS" -gt 0 ] || rm -f "$DIR/nodes-$p.conf"
	log "starting node 127.0.0.1:$p"
	redis-server --cluster-enabled yes --daemonize yes --save '' --appendonly no \
		--bind 127.0.0.1 --port "$p" "${EXTRA[@]}" \
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
# In failover mode a restarted node brings its cluster state back: nothing to create.
if { [ "$fresh" = yes ] && [ "$REPLICAS" -eq 0 ]; } || [ "${known:-0}" -lt "${#PORTS[@]}" ]; then
	if [ "${known:-0}" -gt 1 ]; then
		die "nodes on ports ${PORTS[*]} are in a partial cluster; stop them (redis-cli -p P shutdown nosave) and rerun"
	fi
	log "creating the cluster (3 masters, $REPLICAS replica(s) each)"
	addrs=()
	for p in "${PORTS[@]}"; do addrs+=("127.0.0.1:$p"); done
	redis-cli --cluster create "${addrs[@]}" --cluster-replicas "$REPLICAS" --cluster-yes
fi

log "waiting up to ${WAIT_SECONDS}s for cluster_state:ok"
deadline=$((SECONDS + WAIT_SECONDS))
until cluster_ok; do
	[ "$SECONDS" -lt "$deadline" ] || die "cluster on ports ${PORTS[*]} did not reach cluster_state:ok within ${WAIT_SECONDS}s (logs in $DIR)"
	sleep 1
done
log "ready: $(printf '127.0.0.1:%s,' "${PORTS[@]}" | sed 's/,$//')"
