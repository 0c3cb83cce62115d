package seats_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seatflow"
	"seatflow/internal/keys"
	"seatflow/internal/seats"
	"seatflow/internal/testenv"
)

const show = 7

// testHall builds a hall of rows "A", "B", ... each with perRow seats numbered from 1; seat
// ids are row*100+number. unsellable lists seat ids that are walls (aisles).
func testHall(rows, perRow int, unsellable ...int) *seatflow.Hall {
	walls := map[int]bool{}
	for _, id := range unsellable {
		walls[id] = true
	}
	h := &seatflow.Hall{ID: 1, Name: "Test"}
	for r := 1; r <= rows; r++ {
		for n := 1; n <= perRow; n++ {
			id := r*100 + n
			h.Seats = append(h.Seats, seatflow.Seat{ID: id, HallID: 1, Row: string(rune('A' + r - 1)), Number: n,
				X: n * 10, Y: r * 10, Kind: seatflow.SeatStandard, Sellable: !walls[id]})
		}
	}
	return h
}

func newStore(t *testing.T, hall *seatflow.Hall, occ ...seats.Occupancy) *seats.Store {
	t.Helper()
	r := testenv.NewRedis(t)
	now := time.UnixMilli(1_700_000_000_000)
	s := &seats.Store{RDB: r.Client, Keys: r.Keys, Now: func() time.Time { return now }}
	if created, err := s.Init(context.Background(), show, hall, occ); err != nil || !created {
		t.Fatalf("Init = %v, %v; want created", created, err)
	}
	return s
}

// hold holds seats with the gap rule off (TestGapRule covers it).
func hold(s *seats.Store, hall *seatflow.Hall, token, user string, limit int, ids ...int) error {
	return s.Hold(context.Background(), seats.HoldRequest{ShowtimeID: show, Layout: seats.NewLayout(hall), SeatIDs: ids,
		Token: token, UserID: user, Limit: limit, AllowGaps: true})
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if got := seatflow.ErrorCode(err); got != code {
		t.Fatalf("error code = %q (%v), want %q", got, err, code)
	}
}

func status(t *testing.T, s *seats.Store, id int) seats.State {
	t.Helper()
	states, _, err := s.States(context.Background(), show)
	if err != nil {
		t.Fatal(err)
	}
	st, ok := states[id]
	if !ok {
		return seats.State{Status: seatflow.SeatUnavailable}
	}
	return st
}

func limit(t *testing.T, s *seats.Store, user string) int {
	t.Helper()
	n, err := s.RDB.HGet(context.Background(), s.Keys.Limits(show), user).Int()
	if err == redis.Nil {
		return 0
	} else if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestInit(t *testing.T) {
	ctx := context.Background()
	hall := testHall(1, 4, 104)
	s := newStore(t, hall,
		seats.Occupancy{SeatID: 101, UserID: "u1", Token: "t1", HeldAt: time.UnixMilli(5)},
		seats.Occupancy{SeatID: 102, UserID: "u1", Token: "t2", Sold: true})

	t.Run("OverlaysOccupancy", func(t *testing.T) {
		if got := status(t, s, 101); got.Status != seatflow.SeatHeld || got.Token != "t1" || got.HeldAt.UnixMilli() != 5 {
			t.Errorf("seat 101 = %+v, want held by t1 at 5", got)
		}
		if got := status(t, s, 102); got.Status != seatflow.SeatSold || got.Token != "t2" {
			t.Errorf("seat 102 = %+v, want sold to t2", got)
		}
		if got := status(t, s, 103).Status; got != seatflow.SeatAvailable {
			t.Errorf("seat 103 = %s, want AVAILABLE", got)
		}
		if got := limit(t, s, "u1"); got != 2 {
			t.Errorf("u1 count = %d, want 2", got)
		}
	})
	t.Run("UnsellableSeatNotInHash", func(t *testing.T) {
		if got := status(t, s, 104).Status; got != seatflow.SeatUnavailable {
			t.Errorf("seat 104 = %s, want absent", got)
		}
	})
	t.Run("NeverOverwrites", func(t *testing.T) {
		created, err := s.Init(ctx, show, hall, nil)
		if err != nil || created {
			t.Fatalf("second Init = %v, %v; want false, nil", created, err)
		}
		if got := status(t, s, 101).Status; got != seatflow.SeatHeld {
			t.Errorf("seat 101 = %s after second Init, want HELD", got)
		}
	})
	t.Run("Exists", func(t *testing.T) {
		if ok, err := s.Exists(ctx, show); err != nil || !ok {
			t.Errorf("Exists(show) = %v, %v", ok, err)
		}
		if ok, err := s.Exists(ctx, show+1); err != nil || ok {
			t.Errorf("Exists(other) = %v, %v", ok, err)
		}
	})
}

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
		if got := fmt.Sprint(e.Extensions["seatIds"]); got != "[103]" {
			t.Errorf("seatIds = %s, want [103]", got)
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

func asError(err error, target **seatflow.Error) bool {
	e, ok := err.(*seatflow.Error)
	*target = e
	return ok
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

func TestConfirmAndRelease(t *testing.T) {
	ctx := context.Background()
	hall := testHall(1, 6)
	s := newStore(t, hall)
	if err := hold(s, hall, "t1", "u1", 6, 101, 102); err != nil {
		t.Fatal(err)
	}
	if err := hold(s, hall, "t2", "u2", 6, 104, 105, 106); err != nil {
		t.Fatal(err)
	}
	t.Run("ConfirmSellsHeldSeats", func(t *testing.T) {
		n, err := s.Confirm(ctx, show, "t1", []int{101, 102})
		if err != nil || n != 2 {
			t.Fatalf("Confirm = %d, %v; want 2", n, err)
		}
		if got := status(t, s, 101); got.Status != seatflow.SeatSold || got.Token != "t1" {
			t.Errorf("seat 101 = %+v, want sold to t1", got)
		}
	})
	t.Run("ConfirmIsIdempotent", func(t *testing.T) {
		_, v1, _ := s.States(ctx, show)
		n, err := s.Confirm(ctx, show, "t1", []int{101, 102})
		if err != nil || n != 2 {
			t.Fatalf("Confirm again = %d, %v; want 2", n, err)
		}
		if _, v2, _ := s.States(ctx, show); v2 != v1 {
			t.Errorf("version moved %d → %d on a no-op confirm", v1, v2)
		}
	})
	t.Run("ConfirmCountsOnlyOwnSeats", func(t *testing.T) {
		n, err := s.Confirm(ctx, show, "t1", []int{101, 103, 104})
		if err != nil || n != 1 {
			t.Fatalf("Confirm = %d, %v; want 1 (103 free, 104 someone else's)", n, err)
		}
		if got := status(t, s, 104); got.Status != seatflow.SeatHeld || got.Token != "t2" {
			t.Errorf("seat 104 = %+v, want still held by t2", got)
		}
	})
	t.Run("ReleaseOfForeignTokenChangesNothing", func(t *testing.T) {
		_, v1, _ := s.States(ctx, show)
		n, err := s.Release(ctx, show, "t3", "u2", []int{104, 105, 101})
		if err != nil || n != 0 {
			t.Fatalf("Release = %d, %v; want 0", n, err)
		}
		if got := status(t, s, 104).Token; got != "t2" {
			t.Errorf("seat 104 token = %q, want t2", got)
		}
		if _, v2, _ := s.States(ctx, show); v2 != v1 {
			t.Errorf("version moved on a no-op release")
		}
		if got := limit(t, s, "u2"); got != 3 {
			t.Errorf("u2 count = %d, want 3", got)
		}
	})
	t.Run("ReleaseFreesHeldAndSold", func(t *testing.T) {
		if n, err := s.Release(ctx, show, "t2", "u2", []int{104, 105, 106}); err != nil || n != 3 {
			t.Fatalf("Release held = %d, %v; want 3", n, err)
		}
		if n, err := s.Release(ctx, show, "t1", "u1", []int{101, 102}); err != nil || n != 2 {
			t.Fatalf("Release sold = %d, %v; want 2", n, err)
		}
		for _, id := range []int{101, 102, 104, 105, 106} {
			if got := status(t, s, id).Status; got != seatflow.SeatAvailable {
				t.Errorf("seat %d = %s, want AVAILABLE", id, got)
			}
		}
		if a, b := limit(t, s, "u1"), limit(t, s, "u2"); a != 0 || b != 0 {
			t.Errorf("counts = %d, %d; want 0, 0", a, b)
		}
	})
	t.Run("ReleaseIsIdempotentAndNeverNegative", func(t *testing.T) {
		if n, err := s.Release(ctx, show, "t2", "u2", []int{104, 105, 106}); err != nil || n != 0 {
			t.Fatalf("Release again = %d, %v; want 0", n, err)
		}
		if got := limit(t, s, "u2"); got != 0 {
			t.Errorf("u2 count = %d, want 0", got)
		}
	})
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

func TestEventsAndVersion(t *testing.T) {
	ctx := context.Background()
	hall := testHall(1, 6)
	s := newStore(t, hall)
	sub := s.RDB.Subscribe(ctx, s.Keys.Events(show))
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil { // subscription confirmed before any change
		t.Fatal(err)
	}
	ch := sub.Channel()
	_, v0, _ := s.States(ctx, show)

	next := func() seats.Delta {
		t.Helper()
		select {
		case m := <-ch:
			var d seats.Delta
			if err := json.Unmarshal([]byte(m.Payload), &d); err != nil {
				t.Fatalf("delta %q: %v", m.Payload, err)
			}
			return d
		case <-time.After(2 * time.Second):
			t.Fatal("no delta published")
		}
		return seats.Delta{}
	}
	if err := hold(s, hall, "secret-token", "u1", 6, 103, 104); err != nil {
		t.Fatal(err)
	}
	d := next()
	if d.Version != v0+1 || fmt.Sprint(d.Changes) != "[{103 HELD} {104 HELD}]" {
		t.Errorf("hold delta = %+v, want version %d, 103 and 104 HELD", d, v0+1)
	}
	if _, err := s.Confirm(ctx, show, "secret-token", []int{103}); err != nil {
		t.Fatal(err)
	}
	if d := next(); d.Version != v0+2 || fmt.Sprint(d.Changes) != "[{103 SOLD}]" {
		t.Errorf("confirm delta = %+v", d)
	}
	if _, err := s.Release(ctx, show, "secret-token", "u1", []int{103, 104}); err != nil {
		t.Fatal(err)
	}
	if d := next(); d.Version != v0+3 || fmt.Sprint(d.Changes) != "[{103 AVAILABLE} {104 AVAILABLE}]" {
		t.Errorf("release delta = %+v", d)
	}
	if _, v, _ := s.States(ctx, show); v != v0+3 {
		t.Errorf("version = %d, want %d", v, v0+3)
	}
}

func TestMap(t *testing.T) {
	hall := testHall(1, 4, 104)
	s := newStore(t, hall)
	if err := hold(s, hall, "t1", "u1", 6, 101, 102); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Confirm(context.Background(), show, "t1", []int{101}); err != nil {
		t.Fatal(err)
	}
	m, err := s.Map(context.Background(), show, hall)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, st := range m.Seats {
		got = append(got, string(st.Status))
	}
	if fmt.Sprint(got) != "[SOLD HELD AVAILABLE UNAVAILABLE]" || m.Available != 1 || m.Version < 3 || m.ShowtimeID != show {
		t.Errorf("map = %v available %d version %d", got, m.Available, m.Version)
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

func TestRepairs(t *testing.T) {
	ctx := context.Background()
	hall := testHall(1, 6)
	t.Run("RestoreSellsFreeAndHeldSeats", func(t *testing.T) {
		s := newStore(t, hall)
		if err := hold(s, hall, "paid", "u1", 6, 101); err != nil {
			t.Fatal(err)
		}
		if err := hold(s, hall, "other", "u2", 6, 103); err != nil {
			t.Fatal(err)
		}
		n, conflicts, err := s.Restore(ctx, show, "paid", "u1", []int{101, 102, 103})
		if err != nil || n != 2 || fmt.Sprint(conflicts) != "[103]" {
			t.Fatalf("Restore = %d, %v, %v; want 2, [103]", n, conflicts, err)
		}
		for _, id := range []int{101, 102} {
			if got := status(t, s, id); got.Status != seatflow.SeatSold || got.Token != "paid" {
				t.Errorf("seat %d = %+v, want sold to paid", id, got)
			}
		}
		if got := status(t, s, 103).Token; got != "other" {
			t.Errorf("seat 103 token = %q, want other (left alone)", got)
		}
		if got := limit(t, s, "u1"); got != 2 {
			t.Errorf("u1 count = %d, want 2", got)
		}
		if n, _, _ := s.Restore(ctx, show, "paid", "u1", []int{101, 102}); n != 0 {
			t.Errorf("second Restore changed %d seats, want 0", n)
		}
	})
	t.Run("ReleaseOrphanWithoutUser", func(t *testing.T) {
		s := newStore(t, hall)
		if err := hold(s, hall, "orphan", "u1", 6, 101); err != nil {
			t.Fatal(err)
		}
		if n, err := s.Release(ctx, show, "orphan", "", []int{101}); err != nil || n != 1 {
			t.Fatalf("Release = %d, %v", n, err)
		}
		if got := limit(t, s, "u1"); got != 1 {
			t.Errorf("u1 count = %d, want 1 (left for the recount)", got)
		}
		if counts, err := s.Counts(ctx, show); err != nil || fmt.Sprint(counts) != "map[u1:1]" {
			t.Errorf("Counts = %v, %v; want map[u1:1]", counts, err)
		}
	})
}
