package waitlist_test

import (
	"context"
	"testing"
	"time"

	"seatflow"
	"seatflow/ent/waitlistentry"
	"seatflow/internal/booking"
	"seatflow/internal/catalog"
	"seatflow/internal/payments"
	"seatflow/internal/sales"
	"seatflow/internal/seats"
	"seatflow/internal/tooling/testenv"
	"seatflow/internal/waitlist"
)

// TestOfferReadsPastEntriesTooLarge: what is left of the returned seats after the first
// offers goes to the next entry that fits it, however many entries asking for more wait
// before that one; it goes on sale only when none fits. Four seats come back; four entries
// ask for 3 each, then one for 1: the first gets 3 seats, the last the fourth.
func TestOfferReadsPastEntriesTooLarge(t *testing.T) {
	ctx := context.Background()
	db := testenv.MySQL(t).Client
	r := testenv.NewRedis(t)
	clk := testenv.NewClock(time.Date(2026, 11, 30, 18, 0, 0, 0, time.UTC))
	cat := &catalog.Service{DB: db, Now: clk.Now}
	store := &seats.Store{RDB: r.Client, Keys: r.Keys, Now: clk.Now}
	book := booking.New(booking.Deps{DB: db, Seats: store, Layouts: &seats.Layouts{Halls: cat},
		Hashes: &sales.Service{DB: db, Seats: store, RDB: r.Client, Keys: r.Keys, Catalog: cat, Now: clk.Now},
		RDB:    r.Client, Keys: r.Keys, Catalog: cat, Provider: payments.Test{}}, booking.Config{Now: clk.Now})
	wl := waitlist.New(waitlist.Deps{DB: db, Seats: store, RDB: r.Client, Keys: r.Keys, Catalog: cat, Booking: book},
		waitlist.Config{Now: clk.Now})
	show, hallID := testenv.Showtime(t, db, clk.Now(), testenv.ShowtimeSpec{Rows: 1, PerRow: 6, AllowGaps: true})
	hall, err := cat.Hall(ctx, hallID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Init(ctx, show, hall, nil); err != nil {
		t.Fatal(err)
	}
	ids := make([]int, len(hall.Seats))
	for i, s := range hall.Seats {
		ids[i] = s.ID
	}
	hold := func(user string, seatIDs []int) *seatflow.Order {
		o, err := book.HoldSeats(ctx, user, booking.HoldSeatsInput{ShowtimeID: show, SeatIDs: seatIDs, IdempotencyKey: user})
		if err != nil {
			t.Fatalf("hold for %s: %v", user, err)
		}
		return o
	}
	returning := hold("returns-four", ids[:4])
	hold("keeps-two", ids[4:])
	var entries []int
	for i, n := range []int{3, 3, 3, 3, 1} {
		e, err := wl.Join(ctx, "entrant-"+string(rune('a'+i)), waitlist.JoinInput{ShowtimeID: show, Seats: n})
		if err != nil {
			t.Fatalf("join %d: %v", i, err)
		}
		entries = append(entries, e.ID)
	}

	if _, err := book.CancelOrder(ctx, "returns-four", returning.ID); err != nil {
		t.Fatal(err)
	}
	made, err := wl.OfferReturned(ctx, show)
	if err != nil || made != 2 {
		t.Fatalf("OfferReturned = %d, %v; want 2 offers", made, err)
	}
	for i, want := range []waitlistentry.State{waitlistentry.StateOFFERED, waitlistentry.StateWAITING, waitlistentry.StateWAITING,
		waitlistentry.StateWAITING, waitlistentry.StateOFFERED} {
		e, err := db.WaitlistEntry.Get(ctx, entries[i])
		if err != nil {
			t.Fatal(err)
		}
		if e.State != want {
			t.Errorf("entry %d (%d seats) is %s, want %s", i+1, e.Seats, e.State, want)
		}
	}
	states, _, err := store.States(ctx, show)
	if err != nil {
		t.Fatal(err)
	}
	for id, st := range states {
		if st.Status == seatflow.SeatAvailable || st.Returned {
			t.Errorf("seat %d is %s (returned %v): every returned seat should be offered", id, st.Status, st.Returned)
		}
	}
}
