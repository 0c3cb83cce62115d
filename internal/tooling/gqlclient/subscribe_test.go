package gqlclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"seatflow"
	"seatflow/internal/tooling/gqlclient"
)

const watchQ = `subscription Watch($id: ID!) { seatMap(showtimeId: $id) { kind version seats { seat { id } status } } }`

// seatMapEvent is what a watcher reads of an event.
type seatMapEvent struct {
	Data struct {
		SeatMap struct {
			Kind    string
			Version int
			Seats   []struct {
				Seat   struct{ ID string }
				Status string
			}
		}
	}
}

// onSale creates, through the admin API, a hall of one row of n seats and a showtime in it
// on sale; it returns the showtime's id and its seats' ids.
func (s *server) onSale(t *testing.T, n int) (string, []string) {
	t.Helper()
	ctx := context.Background()
	c := gqlclient.New(s.URL, nil)
	var movie struct{ CreateMovie struct{ ID string } }
	if err := c.Do(ctx, s.admin, createMovie, movieInput("Watched", 100), &movie); err != nil {
		t.Fatal(err)
	}
	var hall struct {
		CreateHall struct {
			ID    string
			Seats []struct{ ID string }
		}
	}
	if err := c.Do(ctx, s.admin, `mutation($in: HallInput!) { createHall(input: $in) { id seats { id } } }`,
		map[string]any{"in": map[string]any{"name": "Hall 1", "rows": []map[string]any{{"label": "A", "seats": n}}}}, &hall); err != nil {
		t.Fatal(err)
	}
	var show struct{ CreateShowtime struct{ ID string } }
	if err := c.Do(ctx, s.admin, `mutation($in: ShowtimeInput!) { createShowtime(input: $in) { id } }`,
		map[string]any{"in": map[string]any{"movieId": movie.CreateMovie.ID, "hallId": hall.CreateHall.ID,
			"startsAt": time.Now().Add(48 * time.Hour).Truncate(time.Hour).Format(time.RFC3339), "purchaseLimit": n,
			"allowSeatGaps": true, "prices": []map[string]any{{"kind": "STANDARD", "amountCents": 1000}}}}, &show); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, s.admin, `mutation($id: ID!) { openSales(showtimeId: $id) { status } }`,
		map[string]any{"id": show.CreateShowtime.ID}, nil); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, st := range hall.CreateHall.Seats {
		ids = append(ids, st.ID)
	}
	return show.CreateShowtime.ID, ids
}

// next reads the subscription's next event.
func next(t *testing.T, sub *gqlclient.Subscription) seatMapEvent {
	t.Helper()
	payload, err := sub.Next()
	if err != nil {
		t.Fatalf("next: %v", err)
	}
	var ev seatMapEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		t.Fatalf("payload %s: %v", payload, err)
	}
	return ev
}

func TestSubscribe(t *testing.T) {
	ctx := context.Background()
	s := newServer(t)
	show, seats := s.onSale(t, 6)
	opts := map[string]gqlclient.SubscribeOptions{
		"AfterAck": {DialTimeout: 5 * time.Second, AckTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second},
		"AtOnce":   {DialTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second},
	}
	for i, name := range []string{"AfterAck", "AtOnce"} {
		t.Run(name+"/SnapshotThenDelta", func(t *testing.T) {
			sub, err := gqlclient.Subscribe(ctx, s.URL, gqlclient.Request{OperationName: "Watch", Query: watchQ,
				Variables: map[string]any{"id": show}}, opts[name])
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
			snap := next(t, sub).Data.SeatMap
			if snap.Kind != "SNAPSHOT" || len(snap.Seats) != len(seats) {
				t.Fatalf("first event %s with %d seats, want a SNAPSHOT of %d", snap.Kind, len(snap.Seats), len(seats))
			}
			err = gqlclient.New(s.URL, nil).Do(ctx, s.token(t, fmt.Sprint("buyer", i), "customer"),
				`mutation($in: HoldSeatsInput!) { holdSeats(input: $in) { id } }`,
				map[string]any{"in": map[string]any{"showtimeId": show, "seatIds": []string{seats[i]}, "idempotencyKey": name}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			delta := next(t, sub).Data.SeatMap
			if delta.Kind != "DELTA" || delta.Version != snap.Version+1 || len(delta.Seats) != 1 ||
				delta.Seats[0].Seat.ID != seats[i] || delta.Seats[0].Status == "AVAILABLE" {
				t.Errorf("second event %+v, want a DELTA of version %d taking seat %s", delta, snap.Version+1, seats[i])
			}
		})
	}
	t.Run("ServerEndsSubscription", func(t *testing.T) {
		sub, err := gqlclient.Subscribe(ctx, s.URL, gqlclient.Request{Query: watchQ,
			Variables: map[string]any{"id": "U2hvd3RpbWU6OTk5OTk5"}}, opts["AfterAck"])
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		// The answer's errors come as a next message (a GraphQL answer), then complete.
		payload, err := sub.Next()
		if err != nil {
			t.Fatal(err)
		}
		if r, err := gqlclient.Decode(payload); err != nil || r.Code() != seatflow.ENOTFOUND {
			t.Errorf("payload %s, want an answer with a %s error", payload, seatflow.ENOTFOUND)
		}
		if _, err := sub.Next(); !errors.Is(err, gqlclient.ErrEnded) {
			t.Errorf("next after the answer: %v, want ErrEnded", err)
		}
	})
	t.Run("ContextEndsConnection", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		sub, err := gqlclient.Subscribe(cctx, s.URL, gqlclient.Request{Query: watchQ,
			Variables: map[string]any{"id": show}}, opts["AfterAck"])
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		next(t, sub) // the snapshot
		cancel()
		done := make(chan error, 1)
		go func() { _, err := sub.Next(); done <- err }()
		select {
		case err := <-done:
			if err == nil || errors.Is(err, gqlclient.ErrEnded) {
				t.Errorf("next after cancel: %v, want the connection's end", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("next still waiting 5s after the context ended")
		}
	})
	t.Run("DialFails", func(t *testing.T) {
		_, err := gqlclient.Subscribe(ctx, s.URL+"/nowhere", gqlclient.Request{Query: watchQ}, opts["AtOnce"])
		if err == nil {
			t.Error("subscribe to a path with no websocket endpoint succeeded")
		}
	})
}
