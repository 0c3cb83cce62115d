// Package reconcile repairs every drift between seat state in Redis and orders in MySQL
// that a crash between the two stores can leave (docs/DESIGN.md "Reconciler"), recounts
// the purchase counts MySQL keeps beside the occupancy, and sends again the refunds that
// a crash or the provider left unsent. It changes seats only through package seats'
// scripts, orders and payments only through package booking, and writes purchase_counts
// rows itself, under their row locks (counts.go).
package reconcile

import "time"

// Report counts what one run repaired.
type Report struct {
	StartedAt           time.Time  `json:"startedAt"`
	FinishedAt          *time.Time `json:"finishedAt"`
	ExpiredCancelled    int        `json:"expiredCancelled"`
	PaidSeatsFixed      int        `json:"paidSeatsFixed"`
	HashesRebuilt       int        `json:"hashesRebuilt"`
	OrphanHoldsReleased int        `json:"orphanHoldsReleased"`
	SoldOrphansReleased int        `json:"soldOrphansReleased"`
	LimitsRecounted     int        `json:"limitsRecounted"`
	// PendingSeatsReheld counts seats of pending orders that Redis showed free, held for
	// their orders again.
	PendingSeatsReheld int `json:"pendingSeatsReheld"`
	// PurchaseCountsRecounted counts customers' purchase counts in MySQL (purchase_counts
	// rows) set to the seats their orders occupy: a missing row inserted, a wrong one
	// corrected, one left without occupancy set to 0.
	PurchaseCountsRecounted int `json:"purchaseCountsRecounted"`
	// WaitlistCountsRecounted counts showtimes whose count of waiting entries in Redis
	// (Keys.Waitlist) was set to MySQL's: lost with Redis, or drifted.
	WaitlistCountsRecounted int `json:"waitlistCountsRecounted"`
	// ReturnedSeatsOffered counts seats returned to a waiting list and left unoffered
	// longer than ReturnedGrace that the run had the waiting list offer (to a waiting
	// entry, or on sale when none fits).
	ReturnedSeatsOffered int `json:"returnedSeatsOffered"`
	// BlocksRepaired counts house seats brought into line with MySQL's block rows: seats
	// blocked in Redis for a row, unblocked for none, rows dropped for seats an order has.
	BlocksRepaired int `json:"blocksRepaired"`
	// RefundsRetried counts refunds the run sent: never sent (a crash, the provider
	// unreachable), reported failed by the provider, or owed to the paid orders of a
	// cancelled showtime.
	RefundsRetried int `json:"refundsRetried"`
	// RefundsOutstanding counts refunds not confirmed by the provider when the run ended
	// (due, failed, or pending): money that has not gone back yet.
	RefundsOutstanding int `json:"refundsOutstanding"`
	// PaidSeatConflicts counts seats of paid orders found held or sold by another token:
	// double sales in Redis that the reconciler reports and leaves to a person. Not
	// stored with the run (they are logged and in the metrics).
	PaidSeatConflicts int `json:"paidSeatConflicts"`
	// UsersOverLimit counts users whose active orders of a showtime cover more seats than
	// its purchase limit: reported (logs, metrics), left to a person, not stored.
	UsersOverLimit int   `json:"usersOverLimit"`
	ShowtimeIDs    []int `json:"showtimeIds"`
}

// repaired reports whether the run changed anything (and so is stored).
func (r *Report) repaired() bool {
	return r.ExpiredCancelled+r.PaidSeatsFixed+r.HashesRebuilt+r.OrphanHoldsReleased+
		r.SoldOrphansReleased+r.LimitsRecounted+r.PendingSeatsReheld+r.BlocksRepaired+r.RefundsRetried+
		r.PurchaseCountsRecounted+r.WaitlistCountsRecounted+r.ReturnedSeatsOffered > 0
}
