package seats

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"
)

// scriptSeconds is the latency of the seat scripts as the instance sees it (queueing in
// the batch and the round trip included), by script; exemplars hold the trace id.
var scriptSeconds = promauto.NewHistogramVec(prometheus.HistogramOpts{
	Namespace: "seatflow", Subsystem: "redis", Name: "script_duration_seconds",
	Help:    "Latency of the seat Lua scripts (hold, confirm, release, init, snapshot, restore, recount, block, unblock, offer, resell), batching included.",
	Buckets: prometheus.ExponentialBuckets(0.0002, 2, 14),
}, []string{"script"})

// scriptNames are the label of each script.
var scriptNames = map[*redis.Script]string{
	holdScript: "hold", confirmScript: "confirm", releaseScript: "release", initScript: "init",
	snapshotScript: "snapshot", restoreScript: "restore", recountScript: "recount",
	blockScript: "block", unblockScript: "unblock", offerScript: "offer", resellScript: "resell",
}

// observeScript records how long script took since start.
func observeScript(ctx context.Context, script *redis.Script, start time.Time) {
	name, ok := scriptNames[script]
	if !ok {
		name = "other"
	}
	h := scriptSeconds.WithLabelValues(name)
	took := time.Since(start).Seconds()
	if sc := trace.SpanContextFromContext(ctx); sc.IsSampled() {
		h.(prometheus.ExemplarObserver).ObserveWithExemplar(took, prometheus.Labels{"trace_id": sc.TraceID().String()})
		return
	}
	h.Observe(took)
}
