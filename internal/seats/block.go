package seats

import (
	"context"
	"fmt"
	"strconv"

	"seatflow"
	"seatflow/internal/rdb"
)

// Block makes the free seats of a showtime house seats (BLOCKED) with lua/block.lua: seats
// already blocked stay so, and seats held, sold or not in the hash are left alone and
// returned as refused. It fails with ErrNoSeatMap (in the chain) when the showtime has no
// seat hash. The caller (package sales) writes MySQL's block rows first.
func (s *Store) Block(ctx context.Context, showID int, seats []int) (refused []int, err error) {
	if len(seats) == 0 {
		return nil, nil
	}
	args := append(ids(seats), traceparent(ctx))
	res, err := s.run(ctx, blockScript, s.showKeys(showID, false), args...).StringSlice()
	if err != nil {
		return nil, rdb.Classify("block seats", err)
	}
	switch {
	case len(res) == 1 && res[0] == "NOHASH":
		return nil, fmt.Errorf("block seats: %w", ErrNoSeatMap)
	case len(res) >= 2 && res[0] == "OK":
		v, _ := strconv.Atoi(res[1])
		s.saw(showID, v)
		return seatIDs(res[2:]), nil
	}
	return nil, fmt.Errorf("block seats: unexpected reply %q", res)
}

// Unblock gives the blocked seats among seatIDs back to sale (AVAILABLE) with
// lua/unblock.lua; seats in any other state are left alone. It returns how many it
// unblocked.
func (s *Store) Unblock(ctx context.Context, showID int, seatIDs []int) (int, error) {
	if len(seatIDs) == 0 {
		return 0, nil
	}
	args := append(ids(seatIDs), traceparent(ctx))
	keys := append(s.showKeys(showID, false), s.Keys.Waitlist(showID))
	res, err := s.run(ctx, unblockScript, keys, args...).Int64Slice()
	if err != nil {
		return 0, rdb.Classify("unblock seats", err)
	}
	s.saw(showID, int(res[1]))
	s.returned(showID, res[2])
	return int(res[0]), nil
}

// BlockRefused is the error of a block that left some seats alone because they are held
// or sold: SEATS_UNAVAILABLE with extensions.seatIds naming them (as holds name the seats
// they could not take). l names the seats for people; nil names them by id.
func BlockRefused(l *Layout, refused []int) *seatflow.Error {
	return Error(seatflow.ESEATSUNAVAILABLE, refused, "not blocked, held or sold: %s", labels(l, refused))
}
