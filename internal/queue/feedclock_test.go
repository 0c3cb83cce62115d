package queue

import (
	"testing"
	"time"

	"seatflow"
	"seatflow/internal/tooling/testenv"
)

// TestRefreshReadsTheClock: a subscriber whose ticket has not changed is pushed again
// once Refresh has passed on the service's clock since its last push, and not before;
// the clock is moved by hand, nothing sleeps.
func TestRefreshReadsTheClock(t *testing.T) {
	clk := testenv.NewClock(time.Date(2026, 11, 30, 18, 0, 0, 0, time.UTC))
	s := &Service{Config: Config{Now: clk.Now, Refresh: 15 * time.Second}}
	const showID = 7
	rec := record{User: "u", Status: recWaiting, Member: "m", Joined: "1"}
	// positions.lua's reply for one subscriber: the queue open, 3 waiting, 1 admitted a
	// second, the subscriber first in line.
	reply := []any{string(seatflow.QueueOpen), int64(3), "1", int64(0)}
	first, err := s.ticket(showID, "1", rec, seatflow.QueueOpen, 3, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	sub := &subscriber{tnum: "1", rec: rec, last: first, pushedAt: clk.Now(), out: make(chan *seatflow.QueueTicket, 1)}
	f := &feed{showID: showID, subs: map[*subscriber]bool{sub: true}, byNum: map[string]*subscriber{"1": sub}}
	pushed := func() bool {
		select {
		case <-sub.out:
			return true
		default:
			return false
		}
	}

	f.update(s, []*subscriber{sub}, reply)
	if pushed() {
		t.Fatal("an unchanged ticket was pushed at once")
	}
	clk.Advance(s.Refresh - 2*time.Second)
	f.update(s, []*subscriber{sub}, reply)
	if pushed() {
		t.Fatalf("an unchanged ticket was pushed %v after the last push, within Refresh (%v)", s.Refresh-2*time.Second, s.Refresh)
	}
	clk.Advance(2 * time.Second)
	f.update(s, []*subscriber{sub}, reply)
	if !pushed() {
		t.Fatalf("no push %v after the last one (Refresh)", s.Refresh)
	}
	if !sub.pushedAt.Equal(clk.Now()) {
		t.Fatalf("pushedAt = %v, want the clock's %v", sub.pushedAt, clk.Now())
	}
	clk.Advance(time.Second)
	f.update(s, []*subscriber{sub}, reply)
	if pushed() {
		t.Fatal("pushed again a second after a refresh push")
	}
}
