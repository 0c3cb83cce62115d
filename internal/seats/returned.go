package seats

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"seatflow"
	"seatflow/internal/rdb"
)

// Seats returned to a showtime's waiting list ("4|MS", lua/release.lua) are offered to its
// entries in join order (package waitlist) before anyone else may hold them: Offer holds
// some for one entry, Resell puts those no entry fits on sale.

// returned tells OnReturned of seats returned to showID's waiting list (release.lua and
// unblock.lua report how many they returned).
func (s *Store) returned(showID int, n int64) {
	if n > 0 && s.OnReturned != nil {
		s.OnReturned(showID)
	}
}

// Returned reads the seats of the showtime returned to its waiting list, in id order, and
// when the oldest of them came back (zero when there are none).
func (s *Store) Returned(ctx context.Context, showID int) ([]int, time.Time, error) {
	states, _, err := s.States(ctx, showID)
	if err != nil {
		return nil, time.Time{}, err
	}
	var out []int
	var oldest time.Time
	for id, st := range states {
		if !st.Returned {
			continue
		}
		out = append(out, id)
		if oldest.IsZero() || st.HeldAt.Before(oldest) {
			oldest = st.HeldAt
		}
	}
	slices.Sort(out)
	return out, oldest, nil
}

// Offer holds returned seats for a waiting-list offer, as held by token for userID from
// now, all or none: it reports false, changing nothing, when one of them is no longer
// returned (another instance offered it, or it went on sale).
func (s *Store) Offer(ctx context.Context, showID int, token, userID string, seatIDs []int) (bool, error) {
	if len(seatIDs) == 0 {
		return false, fmt.Errorf("offer seats: no seats")
	}
	args := append(append([]any{s.Now.Now().UnixMilli(), token, userID}, ids(seatIDs)...), traceparent(ctx))
	res, err := s.run(ctx, offerScript, s.showKeys(showID, true), args...).StringSlice()
	if err != nil {
		return false, rdb.Classify("offer seats", err)
	}
	if res[0] != "OK" {
		return false, nil
	}
	v, _ := strconv.Atoi(res[1])
	s.saw(showID, v)
	return true, nil
}

// Resell puts returned seats on sale (AVAILABLE) and returns how many it changed; seats
// in any other state are left alone.
func (s *Store) Resell(ctx context.Context, showID int, seatIDs []int) (int, error) {
	if len(seatIDs) == 0 {
		return 0, nil
	}
	args := append(ids(seatIDs), traceparent(ctx))
	res, err := s.run(ctx, resellScript, s.showKeys(showID, false), args...).Int64Slice()
	if err != nil {
		return 0, rdb.Classify("resell seats", err)
	}
	s.saw(showID, int(res[1]))
	return int(res[0]), nil
}

// SoldOut reports whether the showtime has a seat hash and no seat AVAILABLE in it.
func (s *Store) SoldOut(ctx context.Context, showID int) (bool, error) {
	states, _, err := s.States(ctx, showID)
	if err != nil {
		return false, err
	}
	if len(states) == 0 {
		return false, nil
	}
	for _, st := range states {
		if st.Status == seatflow.SeatAvailable {
			return false, nil
		}
	}
	return true, nil
}
