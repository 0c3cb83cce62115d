package booking_test

import (
	"context"
	"testing"

	"seatflow"
	"seatflow/ent/order"
	"seatflow/ent/showtime"
	"seatflow/internal/booking"
)

// cacheBehind is the catalog as an instance whose cache is a moment behind MySQL sees it:
// its cached read of the showtime is the copy taken before a change; reads from MySQL
// are the real catalog's.
type cacheBehind struct {
	booking.Catalog
	cached *seatflow.Showtime
}

func (c cacheBehind) Showtime(context.Context, int) (*seatflow.Showtime, error) {
	st := *c.cached
	return &st, nil
}

// setStatus moves the showtime's status in MySQL only, as another instance's write does.
func (e *env) setStatus(t testing.TB, to seatflow.ShowtimeStatus) {
	t.Helper()
	if err := e.db.Showtime.UpdateOneID(e.show).SetStatus(to).Exec(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestHoldChecksTheSaleInItsTransaction: a hold takes the showtime from the catalog's
// cache, and its transaction counts the seats only while MySQL has the showtime on sale,
// so a sale closed behind the cache's back refuses the hold and leaves nothing (no order,
// no count, the seats free in Redis); and a cache still showing a sale as not open does
// not refuse a hold that MySQL takes.
func TestHoldChecksTheSaleInItsTransaction(t *testing.T) {
	ctx := context.Background()
	t.Run("ClosedBehindTheCache", func(t *testing.T) {
		e := newEnv(t, 2, 8, showOpts{allowGaps: true})
		cached, err := e.cat.FreshShowtime(ctx, e.show)
		if err != nil {
			t.Fatal(err)
		}
		svc := e.copyService()
		svc.Catalog = cacheBehind{Catalog: e.cat, cached: cached}
		e.setStatus(t, seatflow.ShowtimeClosed)

		_, err = svc.HoldSeats(ctx, "alice", booking.HoldSeatsInput{ShowtimeID: e.show, SeatIDs: []int{e.seat("A", 1)}, IdempotencyKey: "k1"})
		wantCode(t, err, seatflow.ENOTONSALE)
		if n, err := e.db.Order.Query().Where(order.ShowtimeID(e.show)).Count(ctx); err != nil || n != 0 {
			t.Fatalf("orders of the closed showtime = %d, %v; want none", n, err)
		}
		e.wantPurchaseCount(t, "alice", 0)
		if st := e.state(t, e.seat("A", 1)); st.Status != seatflow.SeatAvailable {
			t.Fatalf("A1 is %v in Redis after the refused hold, want AVAILABLE", st.Status)
		}
		if n := e.count(t, "alice"); n != 0 {
			t.Fatalf("alice's count in Redis = %d after the refused hold, want 0", n)
		}
	})
	t.Run("OpenedBehindTheCache", func(t *testing.T) {
		e := newEnv(t, 2, 8, showOpts{allowGaps: true})
		e.setStatus(t, seatflow.ShowtimeScheduled)
		cached, err := e.cat.FreshShowtime(ctx, e.show)
		if err != nil {
			t.Fatal(err)
		}
		svc := e.copyService()
		svc.Catalog = cacheBehind{Catalog: e.cat, cached: cached}
		e.setStatus(t, seatflow.ShowtimeOnSale)

		if _, err := svc.HoldSeats(ctx, "alice", booking.HoldSeatsInput{ShowtimeID: e.show, SeatIDs: []int{e.seat("A", 1)}, IdempotencyKey: "k1"}); err != nil {
			t.Fatalf("hold of a showtime on sale whose cached copy is not: %v", err)
		}
		e.wantPurchaseCount(t, "alice", 1)
	})
	t.Run("LatePaymentOfAClosedShowtimeStillCounts", func(t *testing.T) {
		// A late payment takes its seats again whatever the showtime's state: its count is
		// not the hold's (only a hold asks for the sale).
		e := newEnv(t, 2, 8, showOpts{allowGaps: true})
		if err := e.db.Showtime.Update().Where(showtime.ID(e.show)).SetStatus(seatflow.ShowtimeClosed).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		tx, err := e.db.Tx(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		n, err := booking.AddPurchase(ctx, tx, booking.Purchase{UserID: "alice", ShowtimeID: e.show, Seats: 2}, false)
		if err != nil || n != 2 {
			t.Fatalf("AddPurchase without the sale's check = %d, %v; want 2", n, err)
		}
		_, err = booking.AddPurchase(ctx, tx, booking.Purchase{UserID: "alice", ShowtimeID: e.show, Seats: 1, OnSale: true}, false)
		wantCode(t, err, seatflow.ENOTONSALE)
	})
}
