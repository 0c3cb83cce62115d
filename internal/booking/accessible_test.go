package booking_test

import (
	"context"
	"fmt"
	"maps"
	"testing"

	"seatflow"
	"seatflow/internal/booking"
)

// companionRows is a hall's kinds for the companion tests: row B is an accessible seat
// with four companions after it (B1 A, B2–B5 C), row C an accessible seat, a standard seat
// and a companion (C1 A, C2 S, C3 C), row D companions around an accessible seat (D2 C,
// D3 A, D4 C).
var companionRows = map[string]seatflow.SeatKind{
	"B1": seatflow.SeatAccessible, "B2": seatflow.SeatCompanion, "B3": seatflow.SeatCompanion,
	"B4": seatflow.SeatCompanion, "B5": seatflow.SeatCompanion,
	"C1": seatflow.SeatAccessible, "C3": seatflow.SeatCompanion,
	"D2": seatflow.SeatCompanion, "D3": seatflow.SeatAccessible, "D4": seatflow.SeatCompanion,
}

// holdNeeding holds seats for a customer who says they need an accessible seat.
func (e *env) holdNeeding(userID, key string, seatIDs ...int) (*seatflow.Order, error) {
	yes := true
	return e.svc.HoldSeats(context.Background(), userID, booking.HoldSeatsInput{ShowtimeID: e.show, SeatIDs: seatIDs,
		IdempotencyKey: key, NeedsAccessible: &yes})
}

// TestCompanionRule: a companion seat is held only with an adjacent accessible seat of its
// row in the same order (directly or through other companions), at most three companions
// per accessible seat; a refusal is COMPANION_WITHOUT_ACCESSIBLE naming the companions, and
// leaves Redis as it was.
func TestCompanionRule(t *testing.T) {
	e := newEnv(t, 4, 8, showOpts{kinds: companionRows, allowGaps: true, limit: 10})
	s := e.seat
	refused := []struct {
		name  string
		seats []int
	}{
		{"Alone", []int{s("B", 2)}},
		{"TwoAlone", []int{s("B", 2), s("B", 3)}},
		{"NotAdjacent", []int{s("C", 1), s("C", 3)}},
		{"ThroughAStandardSeat", []int{s("C", 1), s("C", 2), s("C", 3)}},
		{"AccessibleOfAnotherRow", []int{s("C", 1), s("B", 2)}},
		{"FourCompanions", []int{s("B", 1), s("B", 2), s("B", 3), s("B", 4), s("B", 5)}},
		{"WithAStandardSeatOnly", []int{s("B", 2), s("A", 2)}},
		{"ThreeWithoutTheirAccessible", []int{s("B", 3), s("B", 4), s("B", 5)}},
	}
	for i, c := range refused {
		t.Run("Refused"+c.name, func(t *testing.T) {
			hash, counts := e.seatHash(t)
			_, err := e.holdNeeding("u1", fmt.Sprint("refused-", i), c.seats...)
			wantCode(t, err, seatflow.ECOMPANION)
			if ext := err.(*seatflow.Error).Extensions["seatIds"]; ext == nil {
				t.Errorf("the refusal names no seat: %v", err)
			}
			if h, n := e.seatHash(t); !maps.Equal(h, hash) || !maps.Equal(n, counts) {
				t.Errorf("Redis changed: %v %v, was %v %v", h, n, hash, counts)
			}
		})
	}
	accepted := []struct {
		name  string
		seats []int
	}{
		{"NextToIt", []int{s("B", 1), s("B", 2)}},
		{"OnBothSides", []int{s("D", 2), s("D", 3), s("D", 4)}},
	}
	for i, c := range accepted {
		t.Run("Accepted"+c.name, func(t *testing.T) {
			_, err := e.holdNeeding(fmt.Sprint("ok", i), fmt.Sprint("ok-", i), c.seats...)
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range c.seats {
				if st := e.state(t, id); st.Status != seatflow.SeatHeld {
					t.Errorf("seat %d is %s, want HELD", id, st.Status)
				}
			}
		})
	}
	t.Run("AcceptedThreeCompanions", func(t *testing.T) {
		e := newEnv(t, 4, 8, showOpts{kinds: companionRows, allowGaps: true, limit: 10})
		if _, err := e.holdNeeding("u1", "k", e.seat("B", 1), e.seat("B", 2), e.seat("B", 3), e.seat("B", 4)); err != nil {
			t.Fatal(err)
		}
	})
}

// TestAccessibleSeatsKeptForThoseWhoNeedThem: while a STANDARD or PREMIUM seat is free, an
// accessible seat is held only with needsAccessible (SEATS_UNAVAILABLE naming it, Redis
// unchanged, otherwise); once every other seat is held, sold or blocked, anyone may hold it;
// a general seat freed again brings the rule back.
func TestAccessibleSeatsKeptForThoseWhoNeedThem(t *testing.T) {
	ctx := context.Background()
	// Row A premium (4 seats), row B: B1 accessible, B2 companion, B3–B4 standard.
	e := newEnv(t, 2, 4, showOpts{allowGaps: true, limit: 10,
		kinds: map[string]seatflow.SeatKind{"B1": seatflow.SeatAccessible, "B2": seatflow.SeatCompanion}})
	b1 := e.seat("B", 1)
	refuse := func(t *testing.T, key string) {
		t.Helper()
		hash, counts := e.seatHash(t)
		_, err := e.hold("walk-in", key, b1)
		wantCode(t, err, seatflow.ESEATSUNAVAILABLE)
		if got := fmt.Sprint(err.(*seatflow.Error).Extensions["seatIds"]); got == "[]" || got == "<nil>" {
			t.Errorf("the refusal names no seat: %v", err)
		}
		if h, n := e.seatHash(t); !maps.Equal(h, hash) || !maps.Equal(n, counts) {
			t.Errorf("Redis changed: %v %v, was %v %v", h, n, hash, counts)
		}
	}
	refuse(t, "w1")
	needs, err := e.holdNeeding("needs", "n1", b1)
	if err != nil {
		t.Fatalf("a customer who needs it: %v", err)
	}
	if _, err := e.svc.CancelOrder(ctx, "needs", needs.ID); err != nil {
		t.Fatal(err)
	}
	// Every general seat taken but one: still kept.
	general := e.mustHold(t, "crowd", "c1", e.seat("A", 1), e.seat("A", 2), e.seat("A", 3), e.seat("A", 4), e.seat("B", 3))
	refuse(t, "w2")
	last := e.mustHold(t, "late", "l1", e.seat("B", 4))
	if _, err := e.svc.PayOrder(ctx, "crowd", general.ID, "pay-crowd"); err != nil {
		t.Fatal(err)
	}
	// Every general seat held or sold: the accessible seat goes to anyone.
	walkIn, err := e.hold("walk-in", "w3", b1)
	if err != nil {
		t.Fatalf("every other seat taken, a customer without needsAccessible: %v", err)
	}
	if _, err := e.svc.CancelOrder(ctx, "walk-in", walkIn.ID); err != nil {
		t.Fatal(err)
	}
	// A general seat back on sale: the rule is back.
	if _, err := e.svc.CancelOrder(ctx, "late", last.ID); err != nil {
		t.Fatal(err)
	}
	refuse(t, "w4")
}
