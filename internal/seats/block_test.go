package seats_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"seatflow"
	"seatflow/internal/seats"
)

// House seats in Redis: block.lua changes only free seats, unblock.lua only blocked ones,
// each with one published delta; hold.lua takes a blocked seat only with UseBlocked.
func TestBlockAndUnblock(t *testing.T) {
	ctx := context.Background()
	hall := testHall(2, 6)
	s := newStore(t, hall)
	ps := s.RDB.Subscribe(ctx, s.Keys.Events(show))
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	next := func() seats.Delta {
		t.Helper()
		select {
		case m := <-ps.Channel():
			var d seats.Delta
			if err := json.Unmarshal([]byte(m.Payload), &d); err != nil {
				t.Fatal(err)
			}
			return d
		case <-time.After(5 * time.Second):
			t.Fatal("no delta published")
		}
		return seats.Delta{}
	}
	if err := hold(s, hall, "t1", "u1", 6, 101); err != nil {
		t.Fatal(err)
	}
	next()
	if _, err := s.Confirm(ctx, show, "t1", []int{101}); err != nil {
		t.Fatal(err)
	}
	next()
	if err := hold(s, hall, "t2", "u2", 6, 102); err != nil {
		t.Fatal(err)
	}
	next()

	// 101 sold, 102 held, 999 not in the hall: refused; 103 and 104 blocked.
	refused, err := s.Block(ctx, show, []int{101, 103, 102, 104, 999})
	if err != nil || fmt.Sprint(refused) != "[101 102 999]" {
		t.Fatalf("Block = %v, %v; want [101 102 999] refused", refused, err)
	}
	d := next()
	if len(d.Changes) != 2 || d.Changes[0] != (seats.DeltaChange{SeatID: "103", Status: seatflow.SeatBlocked}) ||
		d.Changes[1].SeatID != "104" || d.Changes[1].Status != seatflow.SeatBlocked {
		t.Fatalf("delta = %+v, want 103 and 104 BLOCKED", d)
	}
	if got := status(t, s, 103).Status; got != seatflow.SeatBlocked {
		t.Fatalf("seat 103 = %s", got)
	}
	if got := status(t, s, 101); got.Status != seatflow.SeatSold || got.Token != "t1" {
		t.Fatalf("seat 101 = %+v, want still sold to t1", got)
	}
	_, v1, _ := s.States(ctx, show)
	if refused, err := s.Block(ctx, show, []int{103}); err != nil || len(refused) != 0 {
		t.Fatalf("Block again = %v, %v", refused, err)
	}
	if _, v2, _ := s.States(ctx, show); v2 != v1 {
		t.Fatalf("version moved %d → %d blocking a blocked seat", v1, v2)
	}
	m, err := s.Map(ctx, show, hall)
	if err != nil || m.Available != 12-4 {
		t.Fatalf("map available = %d, %v; want 8", m.Available, err)
	}

	// A customer's hold of a blocked seat is refused and changes nothing.
	before, _ := s.RDB.HGetAll(ctx, s.Keys.Seats(show)).Result()
	err = hold(s, hall, "t3", "u3", 6, 105, 103)
	var se *seatflow.Error
	if !errors.As(err, &se) || se.Code != seatflow.ESEATSUNAVAILABLE || fmt.Sprint(se.Extensions["seatIds"]) != "[U2VhdDoxMDM]" {
		t.Fatalf("hold of a blocked seat = %v (%+v)", err, se)
	}
	after, _ := s.RDB.HGetAll(ctx, s.Keys.Seats(show)).Result()
	if fmt.Sprint(before) != fmt.Sprint(after) || limit(t, s, "u3") != 0 {
		t.Fatal("a refused hold changed the seat hash or the count")
	}
	// An admin's hold with UseBlocked takes free and blocked seats alike, counted.
	if err := s.Hold(ctx, seats.HoldRequest{ShowtimeID: show, Layout: seats.NewLayout(hall), SeatIDs: []int{104, 105},
		Token: "t4", UserID: "admin", Limit: 6, AllowGaps: true, UseBlocked: true}); err != nil {
		t.Fatal(err)
	}
	next()
	if got := status(t, s, 104); got.Status != seatflow.SeatHeld || got.Token != "t4" || limit(t, s, "admin") != 2 {
		t.Fatalf("seat 104 = %+v, count %d", got, limit(t, s, "admin"))
	}

	// Unblock frees blocked seats only.
	n, err := s.Unblock(ctx, show, []int{103, 104, 106})
	if err != nil || n != 1 {
		t.Fatalf("Unblock = %d, %v; want 1", n, err)
	}
	if d := next(); len(d.Changes) != 1 || d.Changes[0] != (seats.DeltaChange{SeatID: "103", Status: seatflow.SeatAvailable}) {
		t.Fatalf("delta = %+v", d)
	}
	if got := status(t, s, 104).Status; got != seatflow.SeatHeld {
		t.Fatalf("seat 104 = %s after unblock, want still held", got)
	}
}

func TestBlockWithoutHashAndInitWithBlocks(t *testing.T) {
	ctx := context.Background()
	hall := testHall(1, 6)
	s := newStore(t, hall)
	if _, err := s.Block(ctx, show+1, []int{101}); !errors.Is(err, seats.ErrNoSeatMap) {
		t.Fatalf("Block without a hash = %v, want ErrNoSeatMap", err)
	}
	// A build shows blocked seats BLOCKED, unless an active order has them.
	occ := []seats.Occupancy{{SeatID: 102, UserID: "u", Token: "t", Sold: true}}
	if created, err := s.InitBlocked(ctx, show+1, hall, occ, []int{101, 102}, 0); err != nil || !created {
		t.Fatal(created, err)
	}
	states, _, _ := s.States(ctx, show+1)
	if states[101].Status != seatflow.SeatBlocked || states[102].Status != seatflow.SeatSold || states[103].Status != seatflow.SeatAvailable {
		t.Fatalf("built: %+v", states)
	}
	// bestSeats never offers a blocked seat.
	for _, seat := range seats.BestSeats(hall, states, 4, true) {
		if seat.ID == 101 || seat.ID == 102 {
			t.Fatalf("BestSeats offered seat %d", seat.ID)
		}
	}
	if got := seats.ParseState("3"); got.Status != seatflow.SeatBlocked || got.Token != "" {
		t.Fatalf("ParseState(3) = %+v", got)
	}
}
