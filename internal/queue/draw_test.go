package queue_test

import (
	"context"
	"encoding/hex"
	"sort"
	"testing"
	"time"

	"seatflow"
	"seatflow/internal/queue"
)

// TestDrawRecomputedFromRevealedSeed joins entrants before opensAt through two instances,
// opens the queue, and checks the order it admits them in against the rule the schema
// states, recomputed from the seed the queue reveals once it closes; who joined after
// opensAt queues behind them in arrival order.
func TestDrawRecomputedFromRevealedSeed(t *testing.T) {
	e := newEnv(t, 10, 10)
	other := e.instance()
	q := e.setQueue(t, queue.OnSaleQueueInput{AdmitPerMinute: 60})
	if q.Phase != seatflow.QueuePrequeue || q.DrawSeed != nil || len(q.DrawCommitment) != 64 {
		t.Fatalf("new queue = %+v, want PREQUEUE with a commitment and no seed", q)
	}
	early := users("early", 30)
	ids := map[string]string{}
	for i, u := range early {
		inst := e.q
		if i%2 == 1 {
			inst = other
		}
		tk := e.join(t, inst, u)
		if tk.Status != seatflow.QueueWaiting || tk.Position != nil || tk.EstimatedWaitSeconds != nil {
			t.Fatalf("pre-open ticket = %+v, want WAITING with no position", tk)
		}
		ids[u] = tk.ID
		e.clock.Advance(time.Second)
	}
	// Idempotent: again, from the other instance, the same ticket.
	for i, u := range early[:5] {
		inst := other
		if i%2 == 1 {
			inst = e.q
		}
		if tk := e.join(t, inst, u); tk.ID != ids[u] {
			t.Fatalf("second join of %s: ticket %s, want %s", u, tk.ID, ids[u])
		}
	}
	if tk := e.ticket(t, early[0]); tk.Waiting != len(early) {
		t.Fatalf("waiting before opensAt = %d, want %d", tk.Waiting, len(early))
	}

	if tk := e.open(t, e.q); tk.Admitted != 1 {
		t.Fatalf("the opening tick admitted %d, want 1 (one second's worth of 60 a minute)", tk.Admitted)
	}
	st, _ := e.cat.FreshShowtime(context.Background(), e.show)
	if st.Status != seatflow.ShowtimeOnSale {
		t.Fatalf("showtime after opensAt is %s, want ON_SALE (the queue opens the sale)", st.Status)
	}
	late := users("late", 3)
	for _, u := range late {
		e.join(t, other, u)
	}

	// The order the queue shows: the admitted entrant, then the others by position.
	observed := make([]string, len(early))
	for _, u := range append(append([]string{}, early...), late...) {
		tk := e.ticket(t, u)
		switch {
		case tk.Status == seatflow.QueueAdmitted && tk.Pass != nil:
			observed[0] = u
		case tk.Status == seatflow.QueueWaiting && tk.Position != nil:
			p := *tk.Position
			if p < len(early) {
				observed[p] = u
			} else if want := late[p-len(early)]; u != want {
				t.Errorf("position %d is %s, want %s (late entrants queue in arrival order)", p, u, want)
			}
		default:
			t.Fatalf("ticket of %s after opening = %+v", u, tk)
		}
	}

	// Closed at the start: the seed is revealed and the rule gives the same order.
	e.clock.Advance(2 * time.Hour)
	if tk := e.tick(t, e.q); tk.Outcome != "CLOSED" {
		t.Fatalf("tick after the start: %+v, want CLOSED", tk)
	}
	closed := e.status(t)
	if closed.Phase != seatflow.QueueClosed || closed.DrawSeed == nil {
		t.Fatalf("closed queue = %+v, want CLOSED with its seed", closed)
	}
	seed, err := hex.DecodeString(*closed.DrawSeed)
	if err != nil || len(seed) != 32 || seatflow.DrawCommitment(seed) != q.DrawCommitment {
		t.Fatalf("revealed seed %q does not match the commitment %s published before opening", *closed.DrawSeed, q.DrawCommitment)
	}
	want := append([]string{}, early...)
	sort.Slice(want, func(i, j int) bool {
		return seatflow.DrawKey(seed, ids[want[i]]) < seatflow.DrawKey(seed, ids[want[j]])
	})
	for i := range want {
		if observed[i] != want[i] {
			t.Fatalf("place %d: the queue had %s, the revealed seed gives %s\nqueue: %v\nrule:  %v", i+1, observed[i], want[i], observed, want)
		}
	}
	if tk := e.ticket(t, late[0]); tk.Status != seatflow.QueueTicketClosed {
		t.Errorf("a waiting ticket after the start is %s, want CLOSED", tk.Status)
	}
}
