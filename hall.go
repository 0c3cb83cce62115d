package seatflow

// SeatKind is the class of a seat; each kind has its own prices at a showtime, one per
// ticket type (price.go).
type SeatKind string

// Seat kinds.
const (
	SeatStandard   SeatKind = "STANDARD"
	SeatPremium    SeatKind = "PREMIUM"
	SeatAccessible SeatKind = "ACCESSIBLE"
	// SeatCompanion is a companion seat: sold only with an adjacent ACCESSIBLE seat of
	// the same row in the same order (the companion rule, internal/seats/companion.go).
	SeatCompanion SeatKind = "COMPANION"
)

// SeatKinds lists every seat kind, in the order prices are shown.
var SeatKinds = []SeatKind{SeatStandard, SeatPremium, SeatAccessible, SeatCompanion}

// Values lists every seat kind (ent builds its enum column from it).
func (SeatKind) Values() []string {
	out := make([]string, len(SeatKinds))
	for i, k := range SeatKinds {
		out[i] = string(k)
	}
	return out
}

// Valid reports whether k is a known kind.
func (k SeatKind) Valid() bool {
	for _, known := range SeatKinds {
		if k == known {
			return true
		}
	}
	return false
}

// Reserved reports whether seats of kind k are kept for customers who need them
// (ACCESSIBLE) or their companions (COMPANION): the seats a general sale does not offer
// while it has others (docs/DESIGN.md "Accessible seats and companions").
func (k SeatKind) Reserved() bool { return k == SeatAccessible || k == SeatCompanion }

// MaxCompanions is the most COMPANION seats per ACCESSIBLE seat in one stretch of adjacent
// seats of those two kinds.
const MaxCompanions = 3

// CompanionsFit is the companion rule's count: a stretch of adjacent ACCESSIBLE and
// COMPANION seats of one row (a hall's, or an order's) with accessible and companions of
// each is right when it has no companion, or at least one accessible seat and at most
// MaxCompanions companions per accessible seat.
func CompanionsFit(accessible, companions int) bool {
	return companions == 0 || (accessible > 0 && companions <= MaxCompanions*accessible)
}

// MinAccessible is the fewest ACCESSIBLE seats among seats (accessible and companions
// together) that CompanionsFit takes: one for every MaxCompanions+1 seats, rounded up.
func MinAccessible(seats int) int {
	return (seats + MaxCompanions) / (MaxCompanions + 1)
}

// The longest names of a hall and of its rows, in characters (as their columns count).
const (
	MaxHallName = 100
	MaxRowLabel = 8
)

// Hall is a screen room of a cinema with its seat template, ordered by row then number. Halls never
// change once created.
type Hall struct {
	ID       int    `json:"id"`
	Name     string `json:"name"`
	CinemaID int    `json:"cinemaId"`
	Seats    []Seat `json:"seats"`
}

// Seat is one seat of a hall; X and Y place it for drawing. An unsellable seat (broken,
// kept for staff) is never sold and never part of a seat hash.
type Seat struct {
	ID       int      `json:"id"`
	HallID   int      `json:"hallId"`
	Row      string   `json:"row"`
	Number   int      `json:"number"`
	X        int      `json:"x"`
	Y        int      `json:"y"`
	Kind     SeatKind `json:"kind"`
	Sellable bool     `json:"sellable"`
}

// SeatsByID returns the seats with the given ids, in the order of seats.
func SeatsByID(seats []Seat, ids []int) []Seat {
	if len(ids) == 1 { // a ticket's seat: no set to build
		for i := range seats {
			if seats[i].ID == ids[0] {
				return []Seat{seats[i]}
			}
		}
		return nil
	}
	want := make(map[int]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	var out []Seat
	for _, s := range seats {
		if want[s.ID] {
			out = append(out, s)
		}
	}
	return out
}
