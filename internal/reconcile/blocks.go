package reconcile

import (
	"context"
	"slices"

	"seatflow"
	"seatflow/internal/seats"
)

// repairBlocks is repair 8, house seats: MySQL's block rows are the record of blocks, and
// Redis follows them (docs/DESIGN.md "House seats"), except that an order wins over a
// block. Against the reading of the showtime (Redis, then MySQL's orders, then the block
// rows, all under the show lock that blockSeats and unblockSeats take too):
//
//   - a row over an AVAILABLE seat is blocked in Redis (blockSeats stopped between its
//     row and its script);
//   - a row over a seat an active order holds or bought is dropped: the order wins (a
//     hold won the race with the block; a block over a paid seat is also unblocked in
//     Redis, and the next run's paid-seat repair restores the sale);
//   - a row over a seat not in the hash (unsellable) is dropped;
//   - a row over a seat held or sold by a token no active order has is left for now: the
//     hold may be on its way to MySQL or is an orphan, which repairs 4 and 5 free, and the
//     next run blocks the seat again;
//   - a BLOCKED seat with no row is unblocked (unblockSeats stopped between its delete and
//     its script, or an admin's hold took the seat and its order's transaction failed).
func (x *run) repairBlocks(ctx context.Context, showID int, states map[int]seats.State, tokens map[string]*active) error {
	rows, err := x.r.Sales.Blocked(ctx, showID)
	if err != nil {
		return err
	}
	slices.Sort(rows)
	occupied := map[int]bool{}
	for _, a := range tokens {
		for _, id := range a.seats {
			occupied[id] = true
		}
	}
	recorded := make(map[int]bool, len(rows))
	var block, drop, unblock []int
	for _, id := range rows {
		recorded[id] = true
		st, inHash := states[id]
		switch {
		case occupied[id]:
			drop = append(drop, id)
			if inHash && st.Status == seatflow.SeatBlocked {
				unblock = append(unblock, id)
			}
		case !inHash:
			drop = append(drop, id)
		case st.Status == seatflow.SeatAvailable:
			block = append(block, id)
		}
	}
	for id, st := range states {
		if st.Status == seatflow.SeatBlocked && !recorded[id] {
			unblock = append(unblock, id)
		}
	}
	slices.Sort(unblock)

	drop = drop[:x.take(kindBlocks, len(drop))]
	if err := x.r.Sales.DropBlocks(ctx, showID, drop); err != nil {
		return err
	}
	x.done(kindBlocks, len(drop), showID)

	block = block[:x.take(kindBlocks, len(block))]
	refused, err := x.r.Seats.Block(ctx, showID, block)
	if err != nil {
		return err
	}
	// A seat taken since the reading stays with its taker; the next run judges its row.
	x.left[kindBlocks] += len(refused)
	x.done(kindBlocks, len(block)-len(refused), showID)

	unblock = unblock[:x.take(kindBlocks, len(unblock))]
	n, err := x.r.Seats.Unblock(ctx, showID, unblock)
	if err != nil {
		return err
	}
	x.left[kindBlocks] += len(unblock) - n
	x.done(kindBlocks, n, showID)
	return nil
}
