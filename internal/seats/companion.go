package seats

import (
	"seatflow"
)

// CheckCompanions is the companion rule (docs/DESIGN.md "Accessible seats and companions"):
// every COMPANION seat asked for sits in a run of adjacent ACCESSIBLE and COMPANION seats
// asked for, in one row, that seatflow.CompanionsFit (an accessible seat, at most
// seatflow.MaxCompanions companions per accessible seat). Adjacent is next in the row by
// number: a seat of another kind, or an unsellable seat, between two seats parts them. It
// returns COMPANION_WITHOUT_ACCESSIBLE naming the companion seats of every run that breaks
// the rule, nil when none does.
func (l *Layout) CheckCompanions(seatIDs []int) error {
	asked := make(map[int]bool, len(seatIDs))
	companions := false
	for _, id := range seatIDs {
		if l.kindOf[id].Reserved() {
			asked[id] = true
			companions = companions || l.kindOf[id] == seatflow.SeatCompanion
		}
	}
	if !companions {
		return nil
	}
	var faulty []int
	for _, run := range l.runs(asked) {
		var accessible int
		var comp []int
		for _, id := range run {
			switch l.kindOf[id] {
			case seatflow.SeatAccessible:
				accessible++
			case seatflow.SeatCompanion:
				comp = append(comp, id)
			}
		}
		if !seatflow.CompanionsFit(accessible, len(comp)) {
			faulty = append(faulty, comp...)
		}
	}
	if len(faulty) == 0 {
		return nil
	}
	return Error(seatflow.ECOMPANION, faulty,
		"a companion seat is sold only with an adjacent accessible seat of its row in the same order, at most %d per accessible seat: %s",
		seatflow.MaxCompanions, labels(l, faulty))
}

// runs returns the runs of adjacent seats of set, row by row: each a maximal stretch of a
// row's seats (ordered by number) that are all in set.
func (l *Layout) runs(set map[int]bool) [][]int {
	var out [][]int
	for _, row := range l.rows {
		var run []int
		for _, id := range row {
			if set[id] {
				run = append(run, id)
				continue
			}
			if len(run) > 0 {
				out = append(out, run)
				run = nil
			}
		}
		if len(run) > 0 {
			out = append(out, run)
		}
	}
	return out
}

// accessibleOf returns the ACCESSIBLE seats among seatIDs, in their order.
func (l *Layout) accessibleOf(seatIDs []int) []int {
	var out []int
	for _, id := range seatIDs {
		if l.kindOf[id] == seatflow.SeatAccessible {
			out = append(out, id)
		}
	}
	return out
}
