package booking

import (
	"context"
	"time"

	"seatflow"
	"seatflow/internal/background"
	"seatflow/internal/seats"
)

// Admissions is the on-sale queue's part in holds and in the end of orders (package
// queue): its passes, verified without a store, and their end.
type Admissions interface {
	// VerifyPass checks pass (signature, expiry, the user's, the showtime's) for a hold of
	// userID on showID: the zero Admission when it is not valid.
	VerifyPass(pass, userID string, showID int) seats.Admission
	// SpendPass ends userID's pass in use for showID if it was issued by heldAt: an order
	// held with it was paid or cancelled.
	SpendPass(ctx context.Context, showID int, userID string, heldAt time.Time) error
}

// admission is what hold.lua's gate is told of a hold: nothing when the showtime's queue
// (as MySQL has it) gates nothing, else the caller's pass as verified, or none.
func (s *Service) admission(st *seatflow.Showtime, userID string, pass *string) *seats.Admission {
	if !st.QueueGates(s.Now.Now()) {
		return nil
	}
	if s.Admissions == nil || pass == nil {
		return &seats.Admission{}
	}
	a := s.Admissions.VerifyPass(*pass, userID, st.ID)
	return &a
}

// spendPass ends the pass an order of userID held at heldAt was held with (paid or
// cancelled): its place among the passes in use goes to the next entrant. A failure is
// reported, not returned: the order's change is committed, and the pass ends by itself.
func (s *Service) spendPass(ctx context.Context, showID int, userID string, heldAt time.Time) {
	if s.Admissions == nil {
		return
	}
	if err := s.Admissions.SpendPass(ctx, showID, userID, heldAt); err != nil {
		background.Failed(ctx, s.Log, background.SpendPass, err, "showtime", showID)
	}
}
