package reconcile

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Repair kinds: the label of the repairs counter and the keys of a run's budgets.
const (
	kindExpired      = "expired_cancelled"
	kindPaidSeats    = "paid_seats_fixed"
	kindHashes       = "hashes_rebuilt"
	kindOrphanHolds  = "orphan_holds_released"
	kindSoldOrphans  = "sold_orphans_released"
	kindLimits       = "limits_recounted"
	kindPendingSeats = "pending_seats_reheld"
	kindBlocks       = "blocks_repaired"
	kindRefunds      = "refunds_retried"
	// kindPurchaseCounts: purchase_counts rows set to their customer's occupancy (MySQL).
	kindPurchaseCounts = "purchase_counts_recounted"
	// kindWaitlistCounts: showtimes' counts of waiting entries set from MySQL (Redis).
	kindWaitlistCounts = "waitlist_counts_recounted"
	// kindReturnedSeats: seats returned to a waiting list and left unoffered, offered.
	kindReturnedSeats = "returned_seats_offered"
)

var (
	repairsTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "seatflow", Subsystem: "reconcile", Name: "repairs_total",
		Help: "Drift repaired by the reconciler, by kind (orders expired, seats, hashes, counts in Redis and MySQL).",
	}, []string{"kind"})
	paidSeatConflictsTotal = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "seatflow", Subsystem: "reconcile", Name: "paid_seat_conflicts_total",
		Help: "Seats of a paid order found held or sold by another token in Redis (a double sale a person must resolve); counted on every run that sees one.",
	})
	usersOverLimitTotal = promauto.NewCounter(prometheus.CounterOpts{
		Namespace: "seatflow", Subsystem: "reconcile", Name: "users_over_limit_total",
		Help: "Users found with more active seats of a showtime than its purchase limit (left to a person); counted on every run that sees one.",
	})
	runsTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: "seatflow", Subsystem: "reconcile", Name: "runs_total",
		Help: "Reconciler runs by outcome (ok, busy, error).",
	}, []string{"outcome"})
)
