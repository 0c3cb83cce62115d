package queue_test

import (
	"context"
	"testing"
	"time"

	"seatflow"
	"seatflow/ent/onsalequeue"
	"seatflow/internal/queue"
)

// next waits for the stream's next ticket; nil when the stream closed.
func next(t *testing.T, ch <-chan *seatflow.QueueTicket, within time.Duration) *seatflow.QueueTicket {
	t.Helper()
	select {
	case tk, ok := <-ch:
		if !ok {
			return nil
		}
		return tk
	case <-time.After(within):
		t.Fatalf("no ticket pushed within %v", within)
		return nil
	}
}

// until reads the stream until ok accepts a ticket (or fails after within).
func until(t *testing.T, ch <-chan *seatflow.QueueTicket, within time.Duration, ok func(*seatflow.QueueTicket) bool) *seatflow.QueueTicket {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		tk := next(t, ch, time.Until(deadline))
		if tk == nil || ok(tk) {
			return tk
		}
	}
}

// TestSubscribersFollowTheirTickets: a subscription pushes the ticket now, its position
// after each admission (never higher than before), its admission with the pass within
// 2 s, at least every Refresh without a change, and ends with the ticket (EXPIRED once
// the pass runs out; closed when its holder leaves). A subscription is presence: a
// subscriber is not skipped as absent.
func TestSubscribersFollowTheirTickets(t *testing.T) {
	e := newEnv(t, 10, 10)
	e.setQueue(t, queue.OnSaleQueueInput{AdmitPerMinute: 60, PassMinutes: intp(1), OpensAt: e.clock.Now().Add(10 * time.Minute)})
	entrants := users("u", 6)
	for _, u := range entrants {
		e.join(t, e.q, u)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	other := e.instance() // subscribers on two instances
	streams := map[string]<-chan *seatflow.QueueTicket{}
	for i, u := range entrants {
		inst := e.q
		if i%2 == 1 {
			inst = other
		}
		ch, err := inst.Watch(ctx, e.show, u)
		if err != nil {
			t.Fatal(err)
		}
		if tk := next(t, ch, time.Second); tk.Status != seatflow.QueueWaiting || tk.Position != nil {
			t.Fatalf("first push = %+v, want WAITING without a position (before opensAt)", tk)
		}
		streams[u] = ch
	}
	if _, err := e.q.Watch(ctx, e.show, "nobody"); seatflow.ErrorCode(err) != seatflow.ENOTFOUND {
		t.Fatalf("watching without a ticket: %v, want NOT_FOUND", err)
	}
	// 9 minutes pass: the subscribers are marked seen meanwhile (SeenEvery is 500 ms here).
	e.clock.Advance(9 * time.Minute)
	time.Sleep(1200 * time.Millisecond)

	e.open(t, e.q) // admits one (one second's worth of 60 a minute)
	last := map[string]int{}
	var admitted string
	for _, u := range entrants {
		tk := until(t, streams[u], 3*time.Second, func(tk *seatflow.QueueTicket) bool { return tk.Status != seatflow.QueueWaiting || tk.Position != nil })
		switch {
		case tk.Status == seatflow.QueueAdmitted:
			if tk.Pass == nil || tk.PassExpiresAt == nil {
				t.Fatalf("admission pushed without its pass: %+v", tk)
			}
			if got := e.q.VerifyPass(*tk.Pass, u, e.show); got.PassID == "" {
				t.Fatalf("pushed pass does not verify")
			}
			admitted = u
		case tk.Status == seatflow.QueueWaiting:
			last[u] = pos(tk)
		default:
			t.Fatalf("%s after opening: %+v (a subscriber must not be skipped as absent)", u, tk)
		}
	}
	if admitted == "" || len(last) != 5 {
		t.Fatalf("after the opening tick: admitted %q, waiting %v", admitted, last)
	}
	// Two more ticks: two more admissions pushed within 2 s, the rest move up, never down.
	for range 2 {
		e.clock.Advance(time.Second)
		start := time.Now()
		e.tick(t, e.q)
		for u, p := range last {
			tk := until(t, streams[u], 3*time.Second, func(tk *seatflow.QueueTicket) bool {
				return tk.Status != seatflow.QueueWaiting || pos(tk) < p
			})
			if tk.Status == seatflow.QueueAdmitted {
				if took := time.Since(start); took > 2*time.Second {
					t.Errorf("admission pushed %v after the tick, want within 2 s", took)
				}
				delete(last, u)
				continue
			}
			if pos(tk) != p-1 {
				t.Errorf("%s moved from %d to %d after one admission", u, p, pos(tk))
			}
			last[u] = pos(tk)
		}
	}
	// Nothing changes: a push comes anyway within Refresh (2 s here).
	for u := range last {
		if tk := next(t, streams[u], 4*time.Second); tk.Status != seatflow.QueueWaiting {
			t.Fatalf("refresh push = %+v", tk)
		}
		break
	}
	// The admitted entrant's pass runs out: EXPIRED, then the stream ends.
	e.clock.Advance(time.Minute)
	if tk := until(t, streams[admitted], 4*time.Second, func(tk *seatflow.QueueTicket) bool { return tk.Status != seatflow.QueueAdmitted }); tk == nil || tk.Status != seatflow.QueueExpired || tk.Pass != nil {
		t.Fatalf("after the pass's expiry: %+v, want EXPIRED without a pass", tk)
	}
	if tk := next(t, streams[admitted], time.Second); tk != nil {
		t.Fatalf("the stream goes on after EXPIRED: %+v", tk)
	}
	// One leaves: its stream ends.
	for u := range last {
		if _, err := e.q.Leave(context.Background(), e.show, u); err != nil {
			t.Fatal(err)
		}
		if tk := until(t, streams[u], 4*time.Second, func(*seatflow.QueueTicket) bool { return false }); tk != nil {
			t.Fatalf("after leaving: %+v, want the stream closed", tk)
		}
		break
	}
}

// TestRemovedQueueClosesStreams: removing the queue before it opens ends every stream
// with a CLOSED ticket.
func TestRemovedQueueClosesStreams(t *testing.T) {
	e := newEnv(t, 2, 5)
	e.setQueue(t, queue.OnSaleQueueInput{AdmitPerMinute: 60})
	e.join(t, e.q, "alice")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := e.q.Watch(ctx, e.show, "alice")
	if err != nil {
		t.Fatal(err)
	}
	next(t, ch, time.Second)
	if _, err := e.instance().Remove(context.Background(), e.show); err != nil {
		t.Fatal(err)
	}
	if tk := next(t, ch, 2*time.Second); tk == nil || tk.Status != seatflow.QueueTicketClosed {
		t.Fatalf("after the removal: %+v, want CLOSED", tk)
	}
	if tk := next(t, ch, time.Second); tk != nil {
		t.Fatalf("the stream goes on after CLOSED: %+v", tk)
	}
}

// TestRefreshAfterRemovalCloses: a refresh that reads the queue's state gone before the
// removal's own event arrives closes the stream as the event would (CLOSED) when the
// queue's record is gone from MySQL too, and drops it without CLOSED when only Redis lost
// the state (join again). The event is left out here: the state is deleted as remove.lua
// deletes it, without publishing.
func TestRefreshAfterRemovalCloses(t *testing.T) {
	for _, removed := range []bool{true, false} {
		e := newEnv(t, 2, 5)
		e.setQueue(t, queue.OnSaleQueueInput{AdmitPerMinute: 60})
		e.join(t, e.q, "alice")
		ctx, cancel := context.WithCancel(context.Background())
		ch, err := e.q.Watch(ctx, e.show, "alice")
		if err != nil {
			t.Fatal(err)
		}
		next(t, ch, time.Second)
		if removed {
			e.db.OnSaleQueue.Delete().Where(onsalequeue.ShowtimeID(e.show)).ExecX(ctx)
		}
		k := e.r.Keys
		e.rdb.Del(ctx, k.Queue(e.show), k.QueueWaiting(e.show), k.QueueTickets(e.show), k.QueueUsers(e.show), k.QueueSeen(e.show))
		tk := until(t, ch, 5*time.Second, func(tk *seatflow.QueueTicket) bool { return tk == nil || tk.Status.Final() })
		switch {
		case removed && (tk == nil || tk.Status != seatflow.QueueTicketClosed):
			t.Fatalf("removed: the stream ended with %+v, want CLOSED", tk)
		case !removed && tk != nil:
			t.Fatalf("lost with Redis: the stream ended with %+v, want no ticket", tk)
		}
		cancel()
	}
}
