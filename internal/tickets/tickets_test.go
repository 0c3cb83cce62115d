package tickets_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/ticket"
)

// TestIssue: a PAID order has one ticket per seat, of its line's ticket type, signed with
// the current key; issuing again (a retried transaction) makes none more; a seat refunded
// before its ticket was made gets a revoked one. Only PAID orders show tickets, and a PAID
// order without its tickets gets them when read, revoked at once when its showtime was
// cancelled.
func TestIssue(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	o := e.order("alice", e.show, seatflow.OrderPaid, e.seats[0], e.seats[1], e.seats[2])
	o.Lines[1].TicketType = seatflow.TicketChild
	refundedAt := e.clock.Now().Add(-time.Minute)
	o.Lines[2].RefundedAt = &refundedAt
	for range 2 {
		e.inTx(func(tx *ent.Tx) error { return e.svc.IssueIn(ctx, tx, o.ID, o.ShowtimeID, o.Lines) })
	}
	tks, err := e.svc.OfOrder(ctx, o, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(tks) != 3 {
		t.Fatalf("%d tickets after issuing twice, want 3", len(tks))
	}
	signing, err := e.keys.Published(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, tk := range tks {
		if tk.SeatID != e.seats[i] || tk.OrderID != o.ID || tk.ShowtimeID != e.show.ID || tk.UserID != "alice" || tk.TicketType != o.Lines[i].TicketType {
			t.Fatalf("ticket %d = %+v, want seat %d of order %d, %s", i, tk, e.seats[i], o.ID, o.Lines[i].TicketType)
		}
		if (tk.RevokedAt != nil) != (i == 2) {
			t.Fatalf("ticket of seat %d revoked at %v; only the refunded seat's is revoked", tk.SeatID, tk.RevokedAt)
		}
	}
	if len(signing) != 1 || e.row(tks[0].ID).KeyID == 0 {
		t.Fatalf("published keys %+v", signing)
	}
	if got, err := e.svc.Ticket(ctx, tks[1].ID); err != nil || got.UserID != "alice" || got.SeatID != e.seats[1] {
		t.Fatalf("Ticket(%d) = %+v, %v", tks[1].ID, got, err)
	}
	if got, err := e.svc.Ticket(ctx, tks[2].ID+1000); err != nil || got != nil {
		t.Fatalf("Ticket of no ticket = %+v, %v; want nil, nil", got, err)
	}

	t.Run("OnlyPaidOrdersShowTickets", func(t *testing.T) {
		for _, st := range []seatflow.OrderStatus{seatflow.OrderPending, seatflow.OrderCancelled, seatflow.OrderExpired} {
			p := e.order("bob", e.show, st, e.seats[3])
			if got, err := e.svc.OfOrder(ctx, p, false); err != nil || len(got) != 0 {
				t.Fatalf("tickets of a %s order: %d (%v), want none", st, len(got), err)
			}
		}
		if n := e.db.Ticket.Query().Where(ticket.OrderIDNEQ(o.ID)).CountX(ctx); n != 0 {
			t.Fatalf("%d tickets of orders that are not PAID", n)
		}
	})
	t.Run("PaidBeforeTicketsGetsThemWhenRead", func(t *testing.T) {
		p := e.order("carol", e.show, seatflow.OrderPaid, e.seats[4], e.seats[5])
		got, err := e.svc.OfOrder(ctx, p, false)
		if err != nil || len(got) != 2 || got[0].RevokedAt != nil {
			t.Fatalf("tickets of an order paid before tickets: %+v (%v), want 2 valid", got, err)
		}
		c := e.order("dan", e.show, seatflow.OrderPaid, e.seats[6])
		got, err = e.svc.OfOrder(ctx, c, true)
		if err != nil || len(got) != 1 || got[0].RevokedAt == nil {
			t.Fatalf("tickets of such an order of a cancelled showtime: %+v (%v), want 1 revoked", got, err)
		}
	})
}

// TestRevoke: refunding an order revokes its tickets, refunding some seats revokes theirs
// only, and a cancelled showtime revokes all of its own; the revocation list of offline
// scanners lists them oldest first, from a time on. A ticket already checked in is not
// taken back by a seat refund: RevokeSeatsIn names it and revokes nothing.
func TestRevoke(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	whole, wholeTks := e.paid("alice", e.seats[0], e.seats[1])
	part, partTks := e.paid("bob", e.seats[2], e.seats[3], e.seats[4])

	e.inTx(func(tx *ent.Tx) error { return e.svc.RevokeOrderIn(ctx, tx, whole.ID) })
	firstAt := e.clock.Now()
	e.clock.Advance(time.Minute)
	e.inTx(func(tx *ent.Tx) error {
		in, err := e.svc.RevokeSeatsIn(ctx, tx, part.ID, []int{e.seats[3]}, true)
		if len(in) != 0 {
			t.Fatalf("seats checked in: %v, want none", in)
		}
		return err
	})
	if c := e.count(); c.Sold != 2 {
		t.Fatalf("sold after the refunds = %d, want 2", c.Sold)
	}
	list, err := e.svc.Revoked(ctx, e.show.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []seatflow.RevokedTicket{{TicketID: wholeTks[0].ID, RevokedAt: firstAt}, {TicketID: wholeTks[1].ID, RevokedAt: firstAt},
		{TicketID: partTks[1].ID, RevokedAt: e.clock.Now()}}
	if !equalRevoked(list, want) {
		t.Fatalf("revocation list = %+v, want %+v", list, want)
	}
	since := firstAt.Add(time.Second)
	if list, err := e.svc.Revoked(ctx, e.show.ID, &since); err != nil || !equalRevoked(list, want[2:]) {
		t.Fatalf("revocation list since %s = %+v (%v), want %+v", since, list, err, want[2:])
	}

	t.Run("CheckedInTicketIsNotTakenBack", func(t *testing.T) {
		e.openDoor()
		if r := e.checkIn(e.svc, "door", e.code(partTks[0]), ""); r.Status != seatflow.CheckInAdmitted {
			t.Fatal(r.Status)
		}
		var in []int
		e.inTx(func(tx *ent.Tx) (err error) {
			in, err = e.svc.RevokeSeatsIn(ctx, tx, part.ID, []int{e.seats[2], e.seats[4]}, true)
			return err
		})
		if !slices.Equal(in, []int{e.seats[2]}) {
			t.Fatalf("RevokeSeatsIn named %v, want the checked-in seat %d", in, e.seats[2])
		}
		if e.row(partTks[0].ID).RevokedAt != nil || e.row(partTks[2].ID).RevokedAt != nil {
			t.Fatal("a refund that named a checked-in ticket revoked tickets")
		}
	})
	t.Run("CancelledShowtimeRevokesAll", func(t *testing.T) {
		e.inTx(func(tx *ent.Tx) error { return e.svc.RevokeShowtimeIn(ctx, tx, e.show.ID) })
		if c := e.count(); c.Sold != 0 || c.CheckedIn != 0 {
			t.Fatalf("count after cancelling = %+v, want nothing sold", c)
		}
		if e.row(wholeTks[0].ID).RevokedAt.After(firstAt) {
			t.Fatal("cancelling moved an earlier revocation's time")
		}
	})
}

// TestRevokeRacesCheckIn: a seat refund (its locking read) and scans of the ticket at
// once: either the scan admits and the refund names the ticket checked in, or the refund
// revokes it and the scan answers REVOKED; never a revoked ticket that was let in.
func TestRevokeRacesCheckIn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	e.openDoor()
	for round := range 6 {
		o, tks := e.paid("alice", e.seats[round])
		code := e.code(tks[0])
		var wg sync.WaitGroup
		var scan *seatflow.CheckInResult
		var checkedIn []int
		start := make(chan struct{})
		wg.Add(2)
		go func() {
			defer wg.Done()
			<-start
			r, err := e.svc.CheckIn(ctx, "door", e.show.ID, code, nil)
			if err != nil {
				t.Error(err)
			}
			scan = r
		}()
		go func() {
			defer wg.Done()
			<-start
			tx, err := e.db.Tx(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			if checkedIn, err = e.svc.RevokeSeatsIn(ctx, tx, o.ID, []int{e.seats[round]}, true); err != nil {
				_ = tx.Rollback()
				t.Error(err)
				return
			}
			if err := tx.Commit(); err != nil {
				t.Error(err)
			}
		}()
		close(start)
		wg.Wait()
		if t.Failed() {
			return
		}
		row := e.row(tks[0].ID)
		switch {
		case scan.Status == seatflow.CheckInAdmitted && len(checkedIn) == 1 && row.RevokedAt == nil && row.CheckedInAt != nil:
		case scan.Status == seatflow.CheckInRevoked && len(checkedIn) == 0 && row.RevokedAt != nil && row.CheckedInAt == nil:
		default:
			t.Fatalf("round %d: scan %s, refund named %v, ticket revoked at %v and checked in at %v", round, scan.Status,
				checkedIn, row.RevokedAt, row.CheckedInAt)
		}
	}
}

func equalRevoked(got, want []seatflow.RevokedTicket) bool {
	return slices.EqualFunc(got, want, func(a, b seatflow.RevokedTicket) bool {
		return a.TicketID == b.TicketID && a.RevokedAt.Equal(b.RevokedAt)
	})
}
