package seats_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seatflow"
	"seatflow/internal/keys"
	"seatflow/internal/nodeid"
	"seatflow/internal/seats"
	"seatflow/internal/tooling/testenv"
)

func TestHold(t *testing.T) {
	ctx := context.Background()
	t.Run("HoldsAllSeats", func(t *testing.T) {
		hall := testHall(1, 6)
		s := newStore(t, hall)
		if err := hold(s, hall, "t1", "u1", 6, 103, 104); err != nil {
			t.Fatal(err)
		}
		for _, id := range []int{103, 104} {
			if got := status(t, s, id); got.Status != seatflow.SeatHeld || got.Token != "t1" || !got.HeldAt.Equal(s.Now()) {
				t.Errorf("seat %d = %+v, want held by t1 now", id, got)
			}
		}
		if got := limit(t, s, "u1"); got != 2 {
			t.Errorf("count = %d, want 2", got)
		}
	})
	t.Run("HeldSeatRejectedAllOrNothing", func(t *testing.T) {
		hall := testHall(1, 6)
		s := newStore(t, hall)
		if err := hold(s, hall, "t1", "u1", 6, 103); err != nil {
			t.Fatal(err)
		}
		err := hold(s, hall, "t2", "u2", 6, 102, 103, 104)
		wantCode(t, err, seatflow.ESEATSUNAVAILABLE)
		var e *seatflow.Error
		_ = asError(err, &e)
		if got, want := fmt.Sprint(e.Extensions["seatIds"]), fmt.Sprint([]string{nodeid.Encode(nodeid.Seat, 103)}); got != want {
			t.Errorf("seatIds = %s, want %s (seat 103)", got, want)
		}
		for _, id := range []int{102, 104} {
			if got := status(t, s, id).Status; got != seatflow.SeatAvailable {
				t.Errorf("seat %d = %s, want AVAILABLE (nothing taken)", id, got)
			}
		}
		if got := limit(t, s, "u2"); got != 0 {
			t.Errorf("u2 count = %d, want 0", got)
		}
	})
	t.Run("UnsellableSeatRejected", func(t *testing.T) {
		hall := testHall(1, 6, 106)
		s := newStore(t, hall)
		wantCode(t, hold(s, hall, "t1", "u1", 6, 106), seatflow.ESEATSUNAVAILABLE)
	})
	t.Run("SeatOfAnotherHallRejected", func(t *testing.T) {
		hall := testHall(1, 6)
		s := newStore(t, hall)
		wantCode(t, hold(s, hall, "t1", "u1", 6, 999), seatflow.EINVALID)
	})
	t.Run("DuplicateOrNoSeatsRejected", func(t *testing.T) {
		hall := testHall(1, 6)
		s := newStore(t, hall)
		wantCode(t, hold(s, hall, "t1", "u1", 6, 101, 101), seatflow.EINVALID)
		wantCode(t, hold(s, hall, "t1", "u1", 6), seatflow.EINVALID)
		if got := limit(t, s, "u1"); got != 0 {
			t.Errorf("count = %d, want 0", got)
		}
	})
	t.Run("PurchaseLimit", func(t *testing.T) {
		hall := testHall(2, 6)
		s := newStore(t, hall)
		if err := hold(s, hall, "t1", "u1", 4, 101, 102, 103); err != nil {
			t.Fatal(err)
		}
		wantCode(t, hold(s, hall, "t2", "u1", 4, 201, 202), seatflow.ELIMIT)
		if err := hold(s, hall, "t3", "u2", 4, 201, 202); err != nil {
			t.Errorf("other user: %v", err)
		}
		if err := hold(s, hall, "t4", "u1", 4, 105, 106); err == nil {
			t.Errorf("second hold over the limit succeeded")
		}
		if err := hold(s, hall, "t5", "u1", 0, 105, 106); err != nil {
			t.Errorf("limit 0 (none): %v", err)
		}
	})
	t.Run("NoSeatHash", func(t *testing.T) {
		r := testenv.NewRedis(t)
		s := &seats.Store{RDB: r.Client, Keys: r.Keys}
		wantCode(t, hold(s, testHall(1, 3), "t", "u", 6, 101), seatflow.EUNAVAILABLE)
	})
	t.Run("RedisDown", func(t *testing.T) {
		rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
		defer rdb.Close()
		s := &seats.Store{RDB: rdb, Keys: keys.New("x")}
		hall := testHall(1, 3)
		wantCode(t, hold(s, hall, "t", "u", 6, 101), seatflow.EUNAVAILABLE)
		_, _, err := s.States(ctx, show)
		wantCode(t, err, seatflow.EUNAVAILABLE)
		_, err = s.Release(ctx, show, "t", "u", []int{101})
		wantCode(t, err, seatflow.EUNAVAILABLE)
	})
}

func TestGapRule(t *testing.T) {
	// Row A: seats 1..8; unsellable ids make aisles.
	cases := []struct {
		name      string
		walls     []int
		taken     []int // held first by someone else
		request   []int
		allowGaps bool
		want      string // "" = allowed
	}{
		{name: "LeavesOneAtRowStart", request: []int{102, 103}, want: seatflow.ESEATGAP},
		{name: "LeavesOneAtRowEnd", request: []int{106, 107}, want: seatflow.ESEATGAP},
		{name: "TakesRowEnd", request: []int{107, 108}},
		{name: "TakesRowStart", request: []int{101, 102}},
		{name: "LeavesTwo", request: []int{103, 104}},
		{name: "LeavesOneBetweenTaken", taken: []int{101, 102}, request: []int{104, 105}, want: seatflow.ESEATGAP},
		{name: "FillsExactlyTheHole", taken: []int{101, 102, 105, 106}, request: []int{103, 104}},
		{name: "LeavesOneNextToAisle", walls: []int{104}, request: []int{102, 103}, want: seatflow.ESEATGAP},
		{name: "AisleEndsBlockAtWall", walls: []int{104}, request: []int{102, 103, 105}, want: seatflow.ESEATGAP},
		{name: "BlockBetweenAisles", walls: []int{103, 106}, request: []int{104, 105}},
		{name: "LeavesOneAfterAisle", walls: []int{103}, request: []int{105, 106}, want: seatflow.ESEATGAP},
		{name: "ExistingGapElsewhereDoesNotBlock", taken: []int{102}, request: []int{105, 106}},
		{name: "ExistingGapNextToSelection", taken: []int{102}, request: []int{104, 105}, want: seatflow.ESEATGAP},
		{name: "GapInsideSelection", request: []int{103, 105}, want: seatflow.ESEATGAP},
		{name: "AllowedWhenShowtimeAllowsGaps", request: []int{102, 103}, allowGaps: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hall := testHall(2, 8, c.walls...)
			s := newStore(t, hall)
			if len(c.taken) > 0 {
				if err := s.Hold(context.Background(), seats.HoldRequest{ShowtimeID: show, Layout: seats.NewLayout(hall), SeatIDs: c.taken,
					Token: "other", UserID: "other", AllowGaps: true}); err != nil {
					t.Fatal(err)
				}
			}
			err := s.Hold(context.Background(), seats.HoldRequest{ShowtimeID: show, Layout: seats.NewLayout(hall), SeatIDs: c.request,
				Token: "t", UserID: "u", Limit: 10, AllowGaps: c.allowGaps})
			wantCode(t, err, c.want)
			if err != nil {
				for _, id := range c.request {
					if got := status(t, s, id).Status; got != seatflow.SeatAvailable {
						t.Errorf("seat %d = %s after a rejected hold, want AVAILABLE", id, got)
					}
				}
			}
		})
	}
}

func TestTakeOver(t *testing.T) {
	hall := testHall(1, 6)
	s := newStore(t, hall)
	if err := hold(s, hall, "old", "u1", 6, 101, 102); err != nil {
		t.Fatal(err)
	}
	err := s.Hold(context.Background(), seats.HoldRequest{ShowtimeID: show, Layout: seats.NewLayout(hall), SeatIDs: []int{101, 102, 103},
		Token: "new", UserID: "u1", Limit: 3, TakeOver: "old"})
	if err != nil {
		t.Fatalf("takeover hold: %v", err)
	}
	if got := limit(t, s, "u1"); got != 3 {
		t.Errorf("count = %d, want 3 (taken-over seats counted once)", got)
	}
	if n, _ := s.Release(context.Background(), show, "old", "u1", []int{101, 102}); n != 0 {
		t.Errorf("late release of the old token freed %d seats, want 0", n)
	}
	if got := status(t, s, 101).Token; got != "new" {
		t.Errorf("seat 101 token = %q, want new", got)
	}
}

func TestConcurrentHoldsOneWinnerPerSeat(t *testing.T) {
	hall := testHall(1, 20)
	s := newStore(t, hall)
	const buyers = 100
	var wg sync.WaitGroup
	won := make([][]int, buyers)
	for i := 0; i < buyers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			start := 101 + i%19
			ids := []int{start, start + 1}
			err := s.Hold(context.Background(), seats.HoldRequest{ShowtimeID: show, Layout: seats.NewLayout(hall), SeatIDs: ids,
				Token: fmt.Sprintf("t%d", i), UserID: fmt.Sprintf("u%d", i), Limit: 6, AllowGaps: true})
			if err == nil {
				won[i] = ids
			} else if seatflow.ErrorCode(err) != seatflow.ESEATSUNAVAILABLE {
				t.Errorf("hold: %v", err)
			}
		}(i)
	}
	wg.Wait()
	owner := map[int]int{}
	for i, ids := range won {
		for _, id := range ids {
			if j, ok := owner[id]; ok {
				t.Fatalf("seat %d won by buyers %d and %d", id, j, i)
			}
			owner[id] = i
		}
	}
	states, _, _ := s.States(context.Background(), show)
	for id, st := range states {
		i, ok := owner[id]
		if ok != (st.Status == seatflow.SeatHeld) || (ok && st.Token != fmt.Sprintf("t%d", i)) {
			t.Errorf("seat %d = %+v, winner %d (%v)", id, st, i, ok)
		}
	}
}
