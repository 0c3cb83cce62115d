package queue

import (
	"context"
	"time"

	"seatflow/internal/rdb"
	"seatflow/internal/seats"
)

// VerifyPass checks pass for a hold of userID on showtime showID (Passes.Verify): no store
// is read; hold.lua checks, with the hold, that the pass is still in use.
func (s *Service) VerifyPass(pass, userID string, showID int) seats.Admission {
	return s.Passes.Verify(pass, userID, showID)
}

// SpendPass ends userID's pass in use for showID if it was admitted by heldAt (spend.lua):
// an order held with it was paid or cancelled, and its place among the passes in use goes
// to the next entrant.
func (s *Service) SpendPass(ctx context.Context, showID int, userID string, heldAt time.Time) error {
	k := s.Keys
	err := s.run(ctx, spendScript, []string{k.QueueTickets(showID), k.QueueUsers(showID), k.QueuePasses(showID)},
		userID, heldAt.UnixMilli()).Err()
	return rdb.Classify("end an admission pass", err)
}
