package seats_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seatflow"
	"seatflow/internal/seats"
	"seatflow/internal/tooling/testenv"
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

func asError(err error, target **seatflow.Error) bool {
	e, ok := err.(*seatflow.Error)
	*target = e
	return ok
}
