package queue_test

import (
	"context"
	"math"
	"testing"
	"time"

	"seatflow"
	"seatflow/internal/queue"
	"seatflow/internal/seats"
)

func intp(n int) *int           { return &n }
func floatp(f float64) *float64 { return &f }

// TestAdmissionNeverAboveTheRate ticks an open queue at uneven intervals and checks that
// over every stretch of time the admissions stay within the rate plus one second's worth,
// and that a stall never turns into a burst.
func TestAdmissionNeverAboveTheRate(t *testing.T) {
	e := newEnv(t, 20, 20) // 400 seats: the inventory cap is 160, above what the test admits
	e.setQueue(t, queue.OnSaleQueueInput{AdmitPerMinute: 120, MaxActive: intp(1000)})
	for _, u := range users("u", 150) {
		e.join(t, e.q, u)
	}
	type point struct {
		at    time.Time
		total int
	}
	open := e.open(t, e.q)
	points := []point{{e.clock.Now(), open.Admitted}}
	for i, gap := range []time.Duration{time.Second, time.Second, 1500 * time.Millisecond, 500 * time.Millisecond,
		time.Second, 20 * time.Second, time.Second, time.Second, 300 * time.Millisecond, time.Second} {
		e.clock.Advance(gap)
		tk := e.tick(t, e.q)
		points = append(points, point{e.clock.Now(), points[i].total + tk.Admitted})
		if gap == 20*time.Second && tk.Admitted > 2 {
			t.Fatalf("after a 20 s stall the tick admitted %d, want at most one second's worth (2)", tk.Admitted)
		}
	}
	const perSecond = 120.0 / 60
	for i := range points {
		for j := i + 1; j < len(points); j++ {
			got := points[j].total - points[i].total
			if i == 0 {
				got = points[j].total // the opening tick's admissions count too
			}
			bound := perSecond*points[j].at.Sub(points[i].at).Seconds() + perSecond
			if float64(got) > bound+1e-9 {
				t.Errorf("%d admitted in %v, more than the rate allows (%.1f)", got, points[j].at.Sub(points[i].at), bound)
			}
		}
	}
	if last := points[len(points)-1].total; last < 15 {
		t.Errorf("only %d admitted in %v at 2 a second", last, points[len(points)-1].at.Sub(points[0].at))
	}
}

// TestAdmissionCaps: never more passes in use than maxActive, nor than ceil(available
// seats / averagePartySize); passes that expire, are spent by their holder's order or
// given back by leaving make room again.
func TestAdmissionCaps(t *testing.T) {
	e := newEnv(t, 1, 10) // 10 seats
	e.setQueue(t, queue.OnSaleQueueInput{AdmitPerMinute: 6000, MaxActive: intp(3), PassMinutes: intp(2),
		AveragePartySize: floatp(2)})
	entrants := users("u", 20)
	for _, u := range entrants {
		e.join(t, e.q, u)
	}
	ctx := context.Background()
	admitted := func() []string {
		var out []string
		for _, u := range entrants {
			if e.ticket(t, u).Status == seatflow.QueueAdmitted {
				out = append(out, u)
			}
		}
		return out
	}
	if tk := e.open(t, e.q); tk.Admitted != 3 || tk.InUse != 3 {
		t.Fatalf("opening tick: %+v, want 3 admitted, 3 in use (maxActive)", tk)
	}
	e.clock.Advance(time.Second)
	if tk := e.tick(t, e.q); tk.Admitted != 0 {
		t.Fatalf("tick with maxActive passes in use admitted %d", tk.Admitted)
	}

	// An order paid or cancelled ends its holder's pass: one more may come in.
	in := admitted()
	if err := e.q.SpendPass(ctx, e.show, in[0], e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.q.Leave(ctx, e.show, in[1]); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Second)
	if tk := e.tick(t, e.q); tk.Admitted != 2 || tk.InUse != 3 {
		t.Fatalf("after a pass spent and one given back: %+v, want 2 admitted, 3 in use", tk)
	}
	if tk := e.ticket(t, in[0]); tk.Status != seatflow.QueueExpired || tk.Pass != nil {
		t.Errorf("spent pass's ticket = %+v, want EXPIRED without a pass", tk)
	}

	// Inventory: 10 seats, party of 2 → at most 5 passes in use; with 6 seats held, 4 free:
	// ceil(4/2) = 2, fewer than the 3 in use, so nobody comes in even when passes expire…
	ids := e.seatIDs()
	for i, u := range []string{"buyer1", "buyer2", "buyer3"} {
		if err := e.store.Hold(ctx, seats.HoldRequest{ShowtimeID: e.show, Layout: seats.NewLayout(e.hall),
			SeatIDs: ids[2*i : 2*i+2], Token: u, UserID: u, AllowGaps: true}); err != nil {
			t.Fatal(err)
		}
	}
	e.clock.Advance(2 * time.Minute) // every pass has expired
	tk := e.tick(t, e.q)
	if tk.Available != 4 || tk.Admitted != 2 || tk.InUse != 2 {
		t.Fatalf("with 4 seats free and no pass in use: %+v, want 2 admitted (ceil(4/2))", tk)
	}
	e.clock.Advance(time.Second)
	if tk := e.tick(t, e.q); tk.Admitted != 0 {
		t.Fatalf("at the inventory cap the tick admitted %d", tk.Admitted)
	}
	// …until seats come back.
	if _, err := e.store.Release(ctx, e.show, "buyer1", "buyer1", ids[0:2]); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Second)
	if tk := e.tick(t, e.q); tk.Admitted != 1 || tk.InUse != 3 {
		t.Fatalf("with 6 seats free: %+v, want one more admitted (ceil(6/2) = 3 in use)", tk)
	}
}

// TestAbsentEntrantSkipped: an entrant unseen for 5 minutes when its turn comes is
// skipped (EXPIRED), the next one admitted in its place; it may join again, at the back.
func TestAbsentEntrantSkipped(t *testing.T) {
	e := newEnv(t, 2, 10)
	e.setQueue(t, queue.OnSaleQueueInput{AdmitPerMinute: 60, OpensAt: e.clock.Now().Add(10 * time.Minute)})
	gone, here := "gone", "here"
	e.join(t, e.q, gone)
	e.join(t, e.q, here)
	e.clock.Advance(9 * time.Minute)
	e.ticket(t, here) // seen 1 minute before the opening; gone was last seen 10 minutes before
	tk := e.open(t, e.q)
	if tk.Admitted != 1 || tk.Skipped > 1 {
		t.Fatalf("opening tick: %+v, want 1 admitted", tk)
	}
	if got := e.ticket(t, here).Status; got != seatflow.QueueAdmitted {
		t.Fatalf("the entrant seen is %s, want ADMITTED", got)
	}
	// gone's turn may have come first (the draw) or not yet; either way it is skipped, not admitted.
	e.clock.Advance(time.Second)
	e.tick(t, e.q)
	old := e.ticket(t, gone)
	if old.Status != seatflow.QueueExpired {
		t.Fatalf("the absent entrant is %s, want EXPIRED", old.Status)
	}
	again := e.join(t, e.q, gone)
	if again.ID == old.ID || again.Status != seatflow.QueueWaiting || pos(again) != 1 {
		t.Fatalf("joining again: %+v, want a new ticket, WAITING at the back (1: nobody else waits)", again)
	}
	if again.JoinedAt.Before(e.clock.Now().Truncate(time.Millisecond)) {
		t.Errorf("the new ticket's joinedAt %v is before now", again.JoinedAt)
	}
}

// TestSoldOutAndResumption: while every seat is held the waiting wait (no seat is free to
// admit anyone to); seats that come back resume admission; with no seat available and
// none held the queue is SOLD_OUT, every waiting ticket with it, the seed revealed, and a
// join answers a SOLD_OUT ticket.
func TestSoldOutAndResumption(t *testing.T) {
	e := newEnv(t, 1, 4)
	e.setQueue(t, queue.OnSaleQueueInput{AdmitPerMinute: 600, AveragePartySize: floatp(2)})
	for _, u := range users("u", 6) {
		e.join(t, e.q, u)
	}
	ctx := context.Background()
	if tk := e.open(t, e.q); tk.Admitted != 2 {
		t.Fatalf("opening: %+v, want 2 admitted (4 seats, parties of 2)", tk)
	}
	ids := e.seatIDs()
	hold := func(token string, seatIDs ...int) {
		t.Helper()
		if err := e.store.Hold(ctx, seats.HoldRequest{ShowtimeID: e.show, Layout: seats.NewLayout(e.hall), SeatIDs: seatIDs,
			Token: token, UserID: token, AllowGaps: true}); err != nil {
			t.Fatal(err)
		}
	}
	hold("a", ids[0], ids[1])
	hold("b", ids[2], ids[3])
	e.clock.Advance(15 * time.Minute) // passes expired, seats still held
	for _, u := range users("u", 6) {
		e.ticket(t, u) // the entrants follow their tickets: they are seen
	}
	if tk := e.tick(t, e.q); tk.Phase != seatflow.QueueOpen || tk.Admitted != 0 || tk.Held != 4 {
		t.Fatalf("all seats held: %+v, want OPEN, nobody admitted", tk)
	}
	statuses := map[seatflow.QueueStatus]int{}
	for _, u := range users("u", 6) {
		statuses[e.ticket(t, u).Status]++
	}
	if statuses[seatflow.QueueWaiting] != 4 || statuses[seatflow.QueueExpired] != 2 {
		t.Fatalf("while every seat is held: %v, want the 4 not admitted still WAITING (the 2 passes expired)", statuses)
	}
	// b's hold expires: its seats come back and admission resumes.
	if _, err := e.store.Release(ctx, e.show, "b", "b", ids[2:4]); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Second)
	if tk := e.tick(t, e.q); tk.Admitted != 1 {
		t.Fatalf("seats back: %+v, want 1 admitted", tk)
	}
	// Everything sold: SOLD_OUT, pushed to a subscriber still waiting.
	var follower string
	for _, u := range users("u", 6) {
		if e.ticket(t, u).Status == seatflow.QueueWaiting {
			follower = u
		}
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	stream, err := e.q.Watch(watchCtx, e.show, follower)
	if err != nil {
		t.Fatal(err)
	}
	hold("c", ids[2], ids[3])
	for _, tok := range []string{"a", "c"} {
		st, _, _ := e.store.States(ctx, e.show)
		var mine []int
		for id, s := range st {
			if s.Token == tok {
				mine = append(mine, id)
			}
		}
		if _, err := e.store.Confirm(ctx, e.show, tok, mine); err != nil {
			t.Fatal(err)
		}
	}
	e.clock.Advance(time.Second)
	soldOutAt := time.Now()
	if tk := e.tick(t, e.q); tk.Outcome != "DONE" || tk.Phase != seatflow.QueueSoldOut {
		t.Fatalf("nothing available, nothing held: %+v, want SOLD_OUT", tk)
	}
	if tk := until(t, stream, 5*time.Second, func(tk *seatflow.QueueTicket) bool { return tk.Status != seatflow.QueueWaiting }); tk == nil || tk.Status != seatflow.QueueTicketSoldOut {
		t.Fatalf("pushed after the sell-out: %+v, want SOLD_OUT", tk)
	} else if took := time.Since(soldOutAt); took > 5*time.Second {
		t.Errorf("SOLD_OUT pushed %v after the tick, want within 5 s", took)
	}
	soldOut := 0
	for _, u := range users("u", 6) {
		if e.ticket(t, u).Status == seatflow.QueueTicketSoldOut {
			soldOut++
		}
	}
	if soldOut != 3 {
		t.Errorf("%d tickets SOLD_OUT, want the 3 still waiting", soldOut)
	}
	if q := e.status(t); q.Phase != seatflow.QueueSoldOut || q.DrawSeed == nil {
		t.Errorf("sold-out queue = %+v, want SOLD_OUT with its seed revealed", q)
	}
	late := e.join(t, e.q, "late")
	if late.Status != seatflow.QueueTicketSoldOut || late.Position != nil {
		t.Errorf("a join after the sell-out = %+v, want a SOLD_OUT ticket", late)
	}
	if again := e.join(t, e.q, "late"); again.ID != late.ID {
		t.Errorf("joining again after the sell-out: %s, want the same ticket %s", again.ID, late.ID)
	}
}

// TestEstimatedWaitFromMeasuredRate: no estimate before anyone was admitted over a
// measured stretch; then position over the measured rate.
func TestEstimatedWaitFromMeasuredRate(t *testing.T) {
	e := newEnv(t, 10, 10)
	e.setQueue(t, queue.OnSaleQueueInput{AdmitPerMinute: 120})
	for _, u := range users("u", 30) {
		e.join(t, e.q, u)
	}
	e.open(t, e.q)
	for _, u := range users("u", 30) {
		if tk := e.ticket(t, u); tk.EstimatedWaitSeconds != nil {
			t.Fatalf("estimate %d before any rate was measured", *tk.EstimatedWaitSeconds)
		}
	}
	for range 5 {
		e.clock.Advance(time.Second)
		e.tick(t, e.q)
	}
	checked := 0
	for _, u := range users("u", 30) {
		tk := e.ticket(t, u)
		if tk.Position == nil {
			continue
		}
		// 2 a second measured: position p waits ceil(p / 2) seconds.
		if tk.EstimatedWaitSeconds == nil || *tk.EstimatedWaitSeconds != int(math.Ceil(float64(*tk.Position)/2)) {
			t.Errorf("position %d: estimate %v, want %d", *tk.Position, tk.EstimatedWaitSeconds, int(math.Ceil(float64(*tk.Position)/2)))
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("nobody waiting")
	}
}
