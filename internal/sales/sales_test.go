package sales_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"seatflow"
)

// TestOpenSales: a scheduled showtime opens with its seat hash built first, from the hall
// with the active orders overlaid (a PENDING_PAYMENT order's seats held, a PAID order's
// sold, an ended order's free); closing stops it and reopening keeps the hash. A showtime
// on sale, cancelled or already started does not open, and a missing one is NOT_FOUND.
func TestOpenSales(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	show, hall := e.showtime(seatflow.ShowtimeScheduled, 0)
	a1, a2, b1 := seat(hall, "A", 1), seat(hall, "A", 2), seat(hall, "B", 1)
	held := e.order("alice", show, seatflow.OrderPending, a1)
	sold := e.order("bob", show, seatflow.OrderPaid, a2)
	e.order("carol", show, seatflow.OrderExpired, b1)
	if e.states(show) != nil {
		t.Fatal("a scheduled showtime has a seat hash")
	}
	st, err := e.svc.OpenSales(ctx, show)
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != seatflow.ShowtimeOnSale || e.status(show) != seatflow.ShowtimeOnSale {
		t.Fatalf("status after OpenSales = %s (MySQL %s), want ON_SALE", st.Status, e.status(show))
	}
	states := e.states(show)
	if len(states) != 8 || states[a1].Status != seatflow.SeatHeld || states[a1].Token != held ||
		states[a2].Status != seatflow.SeatSold || states[a2].Token != sold || states[b1].Status != seatflow.SeatAvailable {
		t.Fatalf("seat hash after opening: %d seats, A1 %+v, A2 %+v, B1 %+v; want A1 held, A2 sold, B1 available",
			len(states), states[a1], states[a2], states[b1])
	}
	if ep := e.db.Showtime.GetX(ctx, show).SeatEpoch; ep != 1 {
		t.Fatalf("seat epoch after one build = %d, want 1", ep)
	}
	_, err = e.svc.OpenSales(ctx, show)
	wantCode(t, err, seatflow.EINVALIDSTATE)

	if st, err := e.svc.CloseSales(ctx, show); err != nil || st.Status != seatflow.ShowtimeClosed {
		t.Fatalf("CloseSales: %+v, %v", st, err)
	}
	if e.states(show) == nil {
		t.Fatal("closing sales dropped the seat hash (its orders can still be paid)")
	}
	if _, err := e.svc.OpenSales(ctx, show); err != nil || e.status(show) != seatflow.ShowtimeOnSale {
		t.Fatalf("reopening: %v, status %s", err, e.status(show))
	}
	if ep := e.db.Showtime.GetX(ctx, show).SeatEpoch; ep != 1 {
		t.Fatalf("seat epoch after reopening = %d, want 1 (the hash was kept)", ep)
	}

	t.Run("StartedShowtimeDoesNotOpen", func(t *testing.T) {
		late, _ := e.showtime(seatflow.ShowtimeScheduled, time.Minute)
		e.clock.Advance(time.Minute)
		_, err := e.svc.OpenSales(ctx, late)
		wantCode(t, err, seatflow.EINVALIDSTATE)
		if e.states(late) != nil || e.status(late) != seatflow.ShowtimeScheduled {
			t.Fatal("a refused OpenSales changed the showtime")
		}
	})
	t.Run("CancelledShowtimeDoesNotOpenOrClose", func(t *testing.T) {
		gone, _ := e.showtime(seatflow.ShowtimeCancelled, 0)
		_, err := e.svc.OpenSales(ctx, gone)
		wantCode(t, err, seatflow.EINVALIDSTATE)
		_, err = e.svc.CloseSales(ctx, gone)
		wantCode(t, err, seatflow.EINVALIDSTATE)
	})
	t.Run("NoSuchShowtime", func(t *testing.T) {
		_, err := e.svc.OpenSales(ctx, show+1000)
		wantCode(t, err, seatflow.ENOTFOUND)
	})
}

// TestInitSeatsBuildsOnce: builders of one showtime's seat hash at once (instances opening
// it, the reconciler's rebuild) take turns under its lock: one builds, the others find
// the hash, and the build is counted once in the seat epoch.
func TestInitSeatsBuildsOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	show, hall := e.showtime(seatflow.ShowtimeOnSale, 0)
	e.order("alice", show, seatflow.OrderPaid, seat(hall, "B", 4))
	var built atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			ok, err := e.svc.InitSeats(ctx, show, hall.ID)
			if err != nil {
				t.Error(err)
			} else if ok {
				built.Add(1)
			}
		}()
	}
	close(start)
	wg.Wait()
	if n := built.Load(); n != 1 {
		t.Fatalf("%d of 8 builders at once built the hash, want 1", n)
	}
	if ep := e.db.Showtime.GetX(ctx, show).SeatEpoch; ep != 1 {
		t.Fatalf("seat epoch = %d, want 1", ep)
	}
	if st := e.states(show)[seat(hall, "B", 4)]; st.Status != seatflow.SeatSold {
		t.Fatalf("the PAID order's seat is %s in the hash, want SOLD", st.Status)
	}
}

// pendingOrders counts the calls of the sales closer.
type pendingOrders struct{ calls atomic.Int32 }

func (p *pendingOrders) ExpireAtSalesClose(context.Context) (int, error) {
	p.calls.Add(1)
	return 0, nil
}

// TestCloseDue: the sales closer closes the showtimes on sale whose sales are due to close
// (CloseAfter after their start), none other, and then has the pending orders ended; a
// second pass finds nothing. Instances may run it at once: each showtime is closed once.
func TestCloseDue(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	orders := &pendingOrders{}
	e.svc.Orders, e.svc.CloseAfter = orders, 10*time.Minute
	due, _ := e.showtime(seatflow.ShowtimeOnSale, time.Hour)
	later, _ := e.showtime(seatflow.ShowtimeOnSale, 2*time.Hour)
	scheduled, _ := e.showtime(seatflow.ShowtimeScheduled, time.Hour)
	e.clock.Advance(time.Hour + 10*time.Minute - time.Second)
	if n, err := e.svc.CloseDue(ctx); err != nil || n != 0 {
		t.Fatalf("a second before the first is due: closed %d (%v), want 0", n, err)
	}
	e.clock.Advance(time.Second)
	if n, err := e.svc.CloseDue(ctx); err != nil || n != 1 {
		t.Fatalf("closed %d (%v), want 1", n, err)
	}
	if e.status(due) != seatflow.ShowtimeClosed || e.status(later) != seatflow.ShowtimeOnSale || e.status(scheduled) != seatflow.ShowtimeScheduled {
		t.Fatalf("statuses %s %s %s, want CLOSED ON_SALE SCHEDULED", e.status(due), e.status(later), e.status(scheduled))
	}
	if n, err := e.svc.CloseDue(ctx); err != nil || n != 0 {
		t.Fatalf("the second pass closed %d (%v), want 0", n, err)
	}
	if c := orders.calls.Load(); c != 3 {
		t.Fatalf("pending orders ended %d times, want once per pass (3)", c)
	}

	t.Run("InstancesAtOnce", func(t *testing.T) {
		for range 3 {
			e.showtime(seatflow.ShowtimeOnSale, time.Minute)
		}
		e.clock.Advance(time.Hour + 11*time.Minute) // later's sales too
		var closed atomic.Int32
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n, err := e.svc.CloseDue(ctx)
				if err != nil {
					t.Error(err)
				}
				closed.Add(int32(n))
			}()
		}
		wg.Wait()
		if n := closed.Load(); n != 4 {
			t.Fatalf("4 closers at once closed %d showtimes, want 4 (each once)", n)
		}
	})
}
