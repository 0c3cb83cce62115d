package seats_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"seatflow"
	"seatflow/internal/seats"
)

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

func TestParseState(t *testing.T) {
	cases := []struct {
		in   string
		want seats.State
	}{
		{"0", seats.State{Status: seatflow.SeatAvailable}},
		{"1|tok|1700000000123", seats.State{Status: seatflow.SeatHeld, Token: "tok", HeldAt: time.UnixMilli(1700000000123)}},
		{"2|tok", seats.State{Status: seatflow.SeatSold, Token: "tok"}},
		// Anything else is held by nobody known: never offered as free.
		{"", seats.State{Status: seatflow.SeatHeld}},
		{"1|tok", seats.State{Status: seatflow.SeatHeld}},
		{"1|a|b|c", seats.State{Status: seatflow.SeatHeld}},
		{"2|a|b", seats.State{Status: seatflow.SeatHeld}},
		{"3|tok", seats.State{Status: seatflow.SeatHeld}},
	}
	for _, c := range cases {
		if got := seats.ParseState(c.in); got != c.want {
			t.Errorf("ParseState(%q) = %+v, want %+v", c.in, got, c.want)
		}
	}
}
