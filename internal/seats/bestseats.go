package seats

import (
	"math"

	"seatflow"
)

// BestSeats suggests count free seats of the hall given the seat states (from States;
// blocked seats are not free, so they are never suggested):
// count adjacent seats in one row, the block whose centre is closest to the centre of the
// hall (middle rows, middle of the row, by x/y), never leaving a single-seat gap next to
// it unless allowGaps. It never suggests a COMPANION seat (sold only with an accessible
// one: BestAccessibleSeats), nor an ACCESSIBLE seat while a STANDARD or PREMIUM seat is
// free (the hold would refuse it without needsAccessible).
//
// When no row has count such seats together it splits the party greedily: the best block
// of the largest size that still exists, then the best block for the rest, and so on. This
// keeps as many people together as possible, the biggest group in the best place. It
// returns nil when fewer than count seats are free (or none can be placed), and never
// more than count seats.
func BestSeats(hall *seatflow.Hall, states map[int]State, count int, allowGaps bool) []seatflow.Seat {
	if count <= 0 || len(hall.Seats) == 0 {
		return nil
	}
	avail := availableSeats(hall, states)
	released := true // no general seat is free: accessible seats are sold to anyone
	for _, seat := range hall.Seats {
		if avail[seat.ID] && !seat.Kind.Reserved() {
			released = false
			break
		}
	}
	offer := map[int]bool{}
	for _, seat := range hall.Seats {
		if avail[seat.ID] && seat.Kind != seatflow.SeatCompanion && (released || seat.Kind != seatflow.SeatAccessible) {
			offer[seat.ID] = true
		}
	}
	if len(offer) < count {
		return nil
	}
	rows := hallRows(hall)
	cx, cy := hallCentre(hall)
	var picked []seatflow.Seat
	for remaining := count; remaining > 0; {
		var block []seatflow.Seat
		for k := remaining; k > 0 && block == nil; k-- {
			block = bestBlock(rows, avail, offer, k, allowGaps, cx, cy, nil)
		}
		if block == nil && !allowGaps {
			// The gap rule leaves no place for the rest: a split suggestion that strands
			// a seat beats no suggestion (the hold itself still enforces the rule).
			block = bestBlock(rows, avail, offer, 1, true, cx, cy, nil)
		}
		if block == nil {
			return nil
		}
		for _, seat := range block {
			delete(offer, seat.ID)
			delete(avail, seat.ID)
		}
		picked = append(picked, block...)
		remaining -= len(block)
	}
	return picked
}

// BestAccessibleSeats suggests count adjacent free seats of one row of which exactly
// accessible are ACCESSIBLE and the rest COMPANION seats (at most seatflow.MaxCompanions
// per accessible seat, the caller checks), the block closest to the centre of the hall:
// what the companion rule lets one order hold, for a customer who needs accessible seats.
// A block that strands a single free seat comes only when no other fits (unless
// allowGaps: then any); nil when no row has such a block.
func BestAccessibleSeats(hall *seatflow.Hall, states map[int]State, count, accessible int, allowGaps bool) []seatflow.Seat {
	if count <= 0 || accessible <= 0 || accessible > count || len(hall.Seats) == 0 {
		return nil
	}
	avail := availableSeats(hall, states)
	offer := map[int]bool{}
	for _, seat := range hall.Seats {
		if avail[seat.ID] && seat.Kind.Reserved() {
			offer[seat.ID] = true
		}
	}
	exact := func(block []seatflow.Seat) bool {
		n := 0
		for _, seat := range block {
			if seat.Kind == seatflow.SeatAccessible {
				n++
			}
		}
		return n == accessible
	}
	rows := hallRows(hall)
	cx, cy := hallCentre(hall)
	if block := bestBlock(rows, avail, offer, count, allowGaps, cx, cy, exact); block != nil || allowGaps {
		return block
	}
	return bestBlock(rows, avail, offer, count, true, cx, cy, exact)
}

// availableSeats is the set of the hall's sellable seats that states show AVAILABLE: the
// seats the gap rule counts as free, whatever their kind (as hold.lua does).
func availableSeats(hall *seatflow.Hall, states map[int]State) map[int]bool {
	avail := map[int]bool{}
	for _, seat := range hall.Seats {
		if st, ok := states[seat.ID]; ok && seat.Sellable && st.Status == seatflow.SeatAvailable {
			avail[seat.ID] = true
		}
	}
	return avail
}

func hallCentre(hall *seatflow.Hall) (float64, float64) {
	minX, maxX, minY, maxY := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range hall.Seats {
		minX, maxX = math.Min(minX, float64(s.X)), math.Max(maxX, float64(s.X))
		minY, maxY = math.Min(minY, float64(s.Y)), math.Max(maxY, float64(s.Y))
	}
	return (minX + maxX) / 2, (minY + maxY) / 2
}

// bestBlock returns the k adjacent seats of one row, each one offer allows, closest to
// (cx, cy) and accepted by accept (nil accepts any), or nil. The gap rule counts the
// seats of avail as free.
func bestBlock(rows [][]seatflow.Seat, avail, offer map[int]bool, k int, allowGaps bool, cx, cy float64,
	accept func([]seatflow.Seat) bool) []seatflow.Seat {
	var best []seatflow.Seat
	bestDist := math.Inf(1)
	isFree := func(id int) bool { return avail[id] }
	for _, row := range rows {
		ids := make([]int, len(row))
		for i, seat := range row {
			ids[i] = seat.ID
		}
	window:
		for start := 0; start+k <= len(row); start++ {
			var sx, sy float64
			block := make(map[int]bool, k)
			for i := start; i < start+k; i++ {
				if !offer[row[i].ID] {
					continue window
				}
				block[row[i].ID] = true
				sx += float64(row[i].X)
				sy += float64(row[i].Y)
			}
			if accept != nil && !accept(row[start:start+k]) {
				continue
			}
			if _, strands := strandedSeat(ids, isFree, block); strands && !allowGaps {
				continue
			}
			d := math.Hypot(sx/float64(k)-cx, sy/float64(k)-cy)
			if d < bestDist-1e-9 {
				bestDist = d
				best = row[start : start+k]
			}
		}
	}
	return append([]seatflow.Seat(nil), best...)
}

// strandedSeat is the gap rule, the same as hold.lua's (a property test holds the two
// together): taking the requested seats of a row (ids ordered by number) must not leave a
// free seat alone — between taken seats, walls (unsellable seats) or the row's ends —
// right next to a requested seat. Older gaps elsewhere in the row do not count. It
// returns the first such seat.
func strandedSeat(row []int, free func(int) bool, requested map[int]bool) (int, bool) {
	freeAfter := func(i int) bool { return i >= 0 && i < len(row) && !requested[row[i]] && free(row[i]) }
	for i := range row {
		if freeAfter(i) && !freeAfter(i-1) && !freeAfter(i+1) &&
			((i > 0 && requested[row[i-1]]) || (i+1 < len(row) && requested[row[i+1]])) {
			return row[i], true
		}
	}
	return 0, false
}
