package seats

import (
	"strconv"

	"seatflow"
)

// Layout is a hall's seat template prepared for holds: each seat's kind and row, and each
// row's seat ids ordered by number (unsellable seats included: they are walls for the gap
// rule). Halls never change once created, so a Layout is built once per hall and shared;
// it is read-only.
type Layout struct {
	Hall    *seatflow.Hall
	kindOf  map[int]seatflow.SeatKind
	rowOf   map[int]int
	labelOf map[int]string
	rows    [][]int
	// general are the hall's sellable seats of kinds not Reserved (STANDARD, PREMIUM): while
	// one is free, an ACCESSIBLE seat goes only to a customer who needs it.
	general []int
}

// Label is what a customer calls a seat of the hall: its row and number, e.g. C7.
func (l *Layout) Label(seatID int) string {
	if l == nil {
		return "#" + strconv.Itoa(seatID)
	}
	if label, ok := l.labelOf[seatID]; ok {
		return label
	}
	return "#" + strconv.Itoa(seatID)
}

// NewLayout prepares hall for holds.
func NewLayout(hall *seatflow.Hall) *Layout {
	l := &Layout{Hall: hall, kindOf: make(map[int]seatflow.SeatKind, len(hall.Seats)), rowOf: make(map[int]int, len(hall.Seats)),
		labelOf: make(map[int]string, len(hall.Seats))}
	for i, row := range hallRows(hall) {
		ids := make([]int, len(row))
		for j, seat := range row {
			ids[j] = seat.ID
			l.rowOf[seat.ID] = i
			l.kindOf[seat.ID] = seat.Kind
			l.labelOf[seat.ID] = seat.Row + strconv.Itoa(seat.Number)
			if seat.Sellable && !seat.Kind.Reserved() {
				l.general = append(l.general, seat.ID)
			}
		}
		l.rows = append(l.rows, ids)
	}
	return l
}

// Kind returns the kind of a seat of the hall, and false for a seat of another hall.
func (l *Layout) Kind(seatID int) (seatflow.SeatKind, bool) {
	k, ok := l.kindOf[seatID]
	return k, ok
}

// gapRows checks that every requested seat is in the hall and returns the rows holding
// one, which the gap rule needs; none when gaps are allowed.
func (l *Layout) gapRows(seatIDs []int, allowGaps bool) ([][]int, error) {
	for _, id := range seatIDs {
		if _, ok := l.rowOf[id]; !ok {
			return nil, seatflow.Errorf(seatflow.EINVALID, "seat %d is not in this hall", id)
		}
	}
	if allowGaps {
		return nil, nil
	}
	touched := map[int]bool{}
	for _, id := range seatIDs {
		touched[l.rowOf[id]] = true
	}
	var rows [][]int
	for i, row := range l.rows {
		if touched[i] {
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// Together picks n of the seats ids for one party: n side by side in one row (next to
// each other in the row's order, which skips nothing but the hall's gaps) when ids have
// them, the first such run in the hall's order; otherwise the first n in the hall's order.
// The waiting list offers returned seats with it. Seats not in the hall are never picked;
// nil when fewer than n are.
func (l *Layout) Together(ids []int, n int) []int {
	in := uniq(ids)
	var ordered []int
	for _, row := range l.rows {
		run := 0
		for i, id := range row {
			if !in[id] {
				run = 0
				continue
			}
			ordered = append(ordered, id)
			if run++; run == n {
				return append([]int(nil), row[i-n+1:i+1]...)
			}
		}
	}
	if len(ordered) < n {
		return nil
	}
	return ordered[:n]
}
