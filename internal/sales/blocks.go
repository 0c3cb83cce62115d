package sales

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/seatblock"
	"seatflow/internal/database"
	"seatflow/internal/seats"
)

// House seats: seats of one showtime kept off sale by staff (docs/DESIGN.md,
// "House seats"). MySQL's seat_blocks rows are the record; the seat hash shows them
// BLOCKED. Both writes are made under the showtime's lock, which the seat-hash build and
// the reconciler's repairs share, so none of them reads the two stores between the writes.
//
//   - block: the rows first (a seat already blocked keeps its row and reason), then
//     lua/block.lua, which blocks only AVAILABLE seats; the rows of the seats it refused
//     (held or sold) are deleted again. A crash between leaves rows over free seats, which
//     the reconciler blocks, or rows over held or sold seats, which it deletes.
//   - unblock: the rows first, then lua/unblock.lua. A crash between leaves blocked seats
//     with no row, which the reconciler unblocks.
//
// A rebuilt seat hash shows the rows' seats BLOCKED unless an active order occupies them.

const (
	// MaxBlockSeats bounds the seats of one blockSeats or unblockSeats (a hall's worth).
	MaxBlockSeats = 500
	// MaxBlockReason bounds a block's reason, in characters (the column's size).
	MaxBlockReason = 200
)

// BlockSeats blocks seats of a showtime as house seats for the reason, on behalf of the
// admin adminID, and returns the seat map after it. Seats held or sold are left alone
// and named by refused (SEATS_UNAVAILABLE, extensions.seatIds), nil when there are none;
// the other seats are blocked all the same. Bad input is BAD_USER_INPUT and changes
// nothing.
func (s *Service) BlockSeats(ctx context.Context, adminID string, showID int, seatIDs []int, reason string) (m *seatflow.SeatMap, refused *seatflow.Error, err error) {
	reason = strings.TrimSpace(reason)
	switch {
	case reason == "":
		return nil, nil, seatflow.Errorf(seatflow.EINVALID, "give a reason for blocking the seats")
	case utf8.RuneCountInString(reason) > MaxBlockReason:
		return nil, nil, seatflow.Errorf(seatflow.EINVALID, "the reason is at most %d characters", MaxBlockReason)
	}
	if err := seatflow.CheckText(reason, false); err != nil {
		return nil, nil, seatflow.Errorf(seatflow.EINVALID, "the reason %v", err)
	}
	st, hall, err := s.blockTarget(ctx, showID, seatIDs)
	if err != nil {
		return nil, nil, err
	}
	rebuild, refusedIDs, err := s.block(ctx, st, seatIDs, adminID, reason)
	if err != nil {
		return nil, nil, err
	}
	if rebuild { // no seat hash although on sale (Redis lost it): built now, with the rows
		if _, err := s.InitSeats(ctx, showID, st.HallID); err != nil {
			return nil, nil, err
		}
	}
	if m, err = s.Seats.Map(ctx, showID, hall); err != nil {
		return nil, nil, err
	}
	if len(refusedIDs) > 0 {
		refused = seats.BlockRefused(seats.NewLayout(hall), refusedIDs)
	}
	return m, refused, nil
}

// block writes the rows and then the seat hash under the showtime's lock. It reports
// whether the showtime is on sale with no seat hash (to build once the lock is free) and
// the seats refused.
func (s *Service) block(ctx context.Context, st *seatflow.Showtime, seatIDs []int, adminID, reason string) (bool, []int, error) {
	lock, err := s.LockShow(ctx, st.ID)
	if err != nil {
		return false, nil, err
	}
	defer lock.Release(context.WithoutCancel(ctx))
	now := s.Now.Now()
	err = s.DB.SeatBlock.MapCreateBulk(seatIDs, func(c *ent.SeatBlockCreate, i int) {
		c.SetShowtimeID(st.ID).SetSeatID(seatIDs[i]).SetReason(reason).SetCreatedBy(adminID).SetCreatedAt(now)
	}).OnConflictColumns(seatblock.FieldShowtimeID, seatblock.FieldSeatID).Ignore().Exec(ctx)
	if err != nil {
		return false, nil, fmt.Errorf("block seats: %w", database.Classify(err))
	}
	refused, err := s.Seats.Block(ctx, st.ID, seatIDs)
	rebuild := false
	if errors.Is(err, seats.ErrNoSeatMap) {
		// No hash: sales never opened (the build reads the rows when they open), or Redis
		// lost it. Seats of active orders are refused as a hash would refuse them.
		rebuild = st.Status == seatflow.ShowtimeOnSale || st.Status == seatflow.ShowtimeClosed
		occ, oerr := s.ActiveOccupancy(ctx, st.ID)
		if oerr != nil {
			return false, nil, oerr
		}
		asked := map[int]bool{}
		for _, id := range seatIDs {
			asked[id] = true
		}
		for _, o := range occ {
			if asked[o.SeatID] {
				refused = append(refused, o.SeatID)
			}
		}
		err = nil
	}
	if err != nil {
		return false, nil, err
	}
	if err := s.DropBlocks(ctx, st.ID, refused); err != nil {
		return false, nil, err
	}
	return rebuild, refused, nil
}

// UnblockSeats gives blocked seats of a showtime back to sale and returns the seat map
// after it; seats that are not blocked are left as they are. Bad input is BAD_USER_INPUT
// and changes nothing.
func (s *Service) UnblockSeats(ctx context.Context, showID int, seatIDs []int) (*seatflow.SeatMap, error) {
	st, hall, err := s.blockTarget(ctx, showID, seatIDs)
	if err != nil {
		return nil, err
	}
	if err := s.unblock(ctx, st.ID, seatIDs); err != nil {
		return nil, err
	}
	return s.Seats.Map(ctx, showID, hall)
}

func (s *Service) unblock(ctx context.Context, showID int, seatIDs []int) error {
	lock, err := s.LockShow(ctx, showID)
	if err != nil {
		return err
	}
	defer lock.Release(context.WithoutCancel(ctx))
	if err := s.DropBlocks(ctx, showID, seatIDs); err != nil {
		return err
	}
	_, err = s.Seats.Unblock(ctx, showID, seatIDs)
	return err
}

// blockTarget checks the input of a block or an unblock: 1 to MaxBlockSeats distinct
// sellable seats of the hall of a showtime that is not cancelled, read from MySQL.
func (s *Service) blockTarget(ctx context.Context, showID int, seatIDs []int) (*seatflow.Showtime, *seatflow.Hall, error) {
	switch {
	case len(seatIDs) == 0:
		return nil, nil, seatflow.Errorf(seatflow.EINVALID, "choose at least one seat")
	case len(seatIDs) > MaxBlockSeats:
		return nil, nil, seatflow.Errorf(seatflow.EINVALID, "at most %d seats at once", MaxBlockSeats)
	}
	if err := seatflow.CheckSeatsOnce(seatIDs); err != nil {
		return nil, nil, err
	}
	st, err := s.Catalog.FreshShowtime(ctx, showID)
	if err != nil {
		return nil, nil, err
	}
	if st.Status == seatflow.ShowtimeCancelled {
		return nil, nil, seatflow.Errorf(seatflow.EINVALIDSTATE, "showtime %d is cancelled", showID)
	}
	hall, err := s.Catalog.Hall(ctx, st.HallID)
	if err != nil {
		return nil, nil, err
	}
	sellable := make(map[int]bool, len(hall.Seats))
	for _, seat := range hall.Seats {
		sellable[seat.ID] = seat.Sellable
	}
	for _, id := range seatIDs {
		if !sellable[id] {
			return nil, nil, seatflow.Errorf(seatflow.EINVALID, "seat %d is not a sellable seat of this showtime's hall", id)
		}
	}
	return st, hall, nil
}

// Blocked lists the blocked seats of a showtime as MySQL records them.
func (s *Service) Blocked(ctx context.Context, showID int) ([]int, error) {
	ids, err := s.DB.SeatBlock.Query().Where(seatblock.ShowtimeID(showID)).Select(seatblock.FieldSeatID).Ints(ctx)
	if err != nil {
		return nil, fmt.Errorf("read blocked seats: %w", database.Classify(err))
	}
	return ids, nil
}

// DropBlocks deletes the block rows of these seats of a showtime (none is fine).
func (s *Service) DropBlocks(ctx context.Context, showID int, seatIDs []int) error {
	if len(seatIDs) == 0 {
		return nil
	}
	_, err := s.DB.SeatBlock.Delete().Where(seatblock.ShowtimeID(showID), seatblock.SeatIDIn(seatIDs...)).Exec(ctx)
	if err != nil {
		return fmt.Errorf("unblock seats: %w", database.Classify(err))
	}
	return nil
}
