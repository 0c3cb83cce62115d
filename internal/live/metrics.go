package live

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

var (
	activeSubscriptions = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: "seatflow", Subsystem: "live", Name: "subscriptions",
		Help: "Seat-map subscriptions open on this instance.",
	})
	showsWatched = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: "seatflow", Subsystem: "live", Name: "showtimes_watched",
		Help: "Showtimes this instance holds a Redis subscription for (they have local watchers).",
	})
	deltasDelivered = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "seatflow", Subsystem: "live", Name: "deltas_delivered_total",
		Help: "Seat-map DELTA events taken by subscribers (one per write of a showtime at most, each carrying every change since the subscriber's last).",
	})
	snapshotsSent = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "seatflow", Subsystem: "live", Name: "snapshots_sent_total",
		Help: "Seat-map SNAPSHOT events sent, by reason (initial, gap, slow, reconnect).",
	}, []string{"reason"})
	deliveryStaleness = promauto.NewHistogram(prometheus.HistogramOpts{
		Namespace: "seatflow", Subsystem: "live", Name: "delivery_staleness_seconds",
		Help:    "Time from a seat change (Redis' clock) to the DELTA carrying it handed to the watchers' connections; one observation per showtime write, of its oldest change.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	})
	slowSubscribers = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "seatflow", Subsystem: "live", Name: "slow_subscribers_total",
		Help: "Times a watcher had not taken its DELTA by its showtime's next write, or its sink had no room for it: what came meanwhile is merged into the one it takes.",
	})
)
