package seatflow

// SeatKind is the class of a seat; each kind has its own prices at a showtime, one per
// ticket type (price.go).
type SeatKind string

// Seat kinds.
const (
	SeatStandard   SeatKind = "STANDARD"
	SeatPremium    SeatKind = "PREMIUM"
	SeatAccessible SeatKind = "ACCESSIBLE"
)

// SeatKinds lists every seat kind, in the order prices are shown.
var SeatKinds = []SeatKind{SeatStandard, SeatPremium, SeatAccessible}

// Values lists every seat kind (ent builds its enum column from it).
func (SeatKind) Values() []string {
	return []string{string(SeatStandard), string(SeatPremium), string(SeatAccessible)}
}

// Valid reports whether k is a known kind.
func (k SeatKind) Valid() bool { return k == SeatStandard || k == SeatPremium || k == SeatAccessible }

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
