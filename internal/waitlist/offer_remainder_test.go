package waitlist_test

import (
	"context"
	"testing"

	"seatflow/ent/waitlistentry"
)

// TestOfferReadsPastEntriesTooLarge: what is left of the returned seats after the first
// offers goes to the next entry that fits it, however many entries asking for more wait
// before that one; it goes on sale only when none fits. Four seats come back; four entries
// ask for 3 each, then one for 1: the first gets 3 seats, the last the fourth.
func TestOfferReadsPastEntriesTooLarge(t *testing.T) {
	e := newEnv(t, 1, 6)
	ctx := context.Background()
	returning := e.hold("returns-four", "A1", "A2", "A3", "A4")
	e.hold("keeps-two", "A5", "A6")
	var entries []int
	for i, n := range []int{3, 3, 3, 3, 1} {
		entries = append(entries, e.join("entrant-"+string(rune('a'+i)), n).ID)
	}
	if _, err := e.book.CancelOrder(ctx, "returns-four", returning.ID); err != nil {
		t.Fatal(err)
	}
	made, err := e.wl.OfferReturned(ctx, e.show)
	if err != nil || made != 2 {
		t.Fatalf("OfferReturned = %d, %v; want 2 offers", made, err)
	}
	for i, want := range []waitlistentry.State{waitlistentry.StateOFFERED, waitlistentry.StateWAITING, waitlistentry.StateWAITING,
		waitlistentry.StateWAITING, waitlistentry.StateOFFERED} {
		en := e.db.WaitlistEntry.GetX(ctx, entries[i])
		if en.State != want {
			t.Errorf("entry %d (%d seats) is %s, want %s", i+1, en.Seats, en.State, want)
		}
	}
	for label, st := range e.states() {
		if st == "AVAILABLE" || st == "RETURNED" {
			t.Errorf("seat %s is %s: every returned seat should be offered", label, st)
		}
	}
}
