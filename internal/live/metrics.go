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
		Help: "Seat-map DELTA events handed to subscribers.",
	})
	snapshotsSent = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "seatflow", Subsystem: "live", Name: "snapshots_sent_total",
		Help: "Seat-map SNAPSHOT events sent, by reason (initial, gap, slow, reconnect).",
	}, []string{"reason"})
	slowSubscribers = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "seatflow", Subsystem: "live", Name: "slow_subscribers_total",
		Help: "Times a subscriber's buffer overflowed; it is resynced with a SNAPSHOT.",
	})
)
