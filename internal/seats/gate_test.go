package seats_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seatflow"
	"seatflow/internal/seats"
)

// TestAdmissionGate holds hold.lua's on-sale queue section to its contract: while the
// queue gates holds, only a pass not expired at the hold's time and, when issued by the
// queue's current epoch, still in use lets the hold through; a refusal changes nothing.
// The queue's own keys are written here as package queue writes them.
func TestAdmissionGate(t *testing.T) {
	hall := testHall(1, 6)
	now := time.UnixMilli(1_700_000_000_000)
	valid := now.Add(10 * time.Minute).Truncate(time.Second)
	cases := []struct {
		name   string
		queue  map[string]any // the queue's hash; nil: none (lost with Redis)
		inUse  map[string]time.Time
		admit  *seats.Admission
		wantOK bool
	}{
		{"NoQueue", nil, nil, nil, true},
		{"NoPassWhileOpen", open(1), nil, &seats.Admission{}, false},
		{"PassInUse", open(1), map[string]time.Time{"1.7": valid}, &seats.Admission{PassID: "1.7", ExpiresAt: valid}, true},
		{"PassSpent", open(1), map[string]time.Time{"1.8": valid}, &seats.Admission{PassID: "1.7", ExpiresAt: valid}, false},
		{"PassExpiryNotItsOwn", open(1), map[string]time.Time{"1.7": valid}, &seats.Admission{PassID: "1.7", ExpiresAt: valid.Add(time.Minute)}, false},
		{"PassExpired", open(1), map[string]time.Time{"1.7": now}, &seats.Admission{PassID: "1.7", ExpiresAt: now}, false},
		{"PassOfALostEpoch", open(2), nil, &seats.Admission{PassID: "1.7", ExpiresAt: valid}, true},
		{"PassOfALostEpochExpired", open(2), nil, &seats.Admission{PassID: "1.7", ExpiresAt: now.Add(-time.Second)}, false},
		{"QueueStateLostPassStands", nil, nil, &seats.Admission{PassID: "1.7", ExpiresAt: valid}, true},
		{"QueueStateLostNoPass", nil, nil, &seats.Admission{}, false},
		{"PrequeueRefusesAll", map[string]any{"phase": "PREQUEUE", "epoch": "1"}, nil, &seats.Admission{}, false},
		{"SoldOutGatesNothing", map[string]any{"phase": "SOLD_OUT", "epoch": "1"}, nil, &seats.Admission{}, true},
		{"ClosedGatesNothing", map[string]any{"phase": "CLOSED", "epoch": "1"}, nil, &seats.Admission{}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t, hall)
			ctx := context.Background()
			if c.queue != nil {
				s.RDB.HSet(ctx, s.Keys.Queue(show), c.queue)
			}
			for id, exp := range c.inUse {
				s.RDB.ZAdd(ctx, s.Keys.QueuePasses(show), redis.Z{Member: id, Score: float64(exp.UnixMilli())})
			}
			before, _ := s.Version(ctx, show)
			err := s.Hold(ctx, seats.HoldRequest{ShowtimeID: show, Layout: seats.NewLayout(hall), SeatIDs: []int{101, 102},
				Token: "t", UserID: "u", Limit: 6, AllowGaps: true, Admission: c.admit})
			if c.wantOK {
				if err != nil {
					t.Fatalf("hold: %v, want it through the gate", err)
				}
				return
			}
			wantCode(t, err, seatflow.ENOTADMITTED)
			after, _ := s.Version(ctx, show)
			if after != before || status(t, s, 101).Status != seatflow.SeatAvailable || limit(t, s, "u") != 0 {
				t.Errorf("refused hold changed Redis: version %d → %d, seat 101 %s, count %d", before, after,
					status(t, s, 101).Status, limit(t, s, "u"))
			}
		})
	}
}

// open is the hash of an OPEN queue in epoch e.
func open(e int) map[string]any { return map[string]any{"phase": "OPEN", "epoch": e} }
