package seats_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seatflow/internal/seats"
	"seatflow/internal/tooling/testenv"
)

// passCheck is hold.lua's admission gate as a script of its own, the pass check a hold
// would make first if the gate left hold.lua: KEYS[1] the queue's hash, KEYS[2] its
// passes in use; ARGV[1] now in ms, ARGV[2] the pass id, ARGV[3] its expiry in ms.
// Returns "OK" or "NOT_ADMITTED".
var passCheck = redis.NewScript(`
local q = redis.call('HMGET', KEYS[1], 'phase', 'epoch')
if q[1] ~= 'SOLD_OUT' and q[1] ~= 'CLOSED' then
  if ARGV[2] == '' or tonumber(ARGV[3]) <= tonumber(ARGV[1]) then
    return 'NOT_ADMITTED'
  end
  if q[1] and string.match(ARGV[2], '^(%d+)%.') == q[2]
      and tonumber(redis.call('ZSCORE', KEYS[2], ARGV[2]) or '0') ~= tonumber(ARGV[3]) then
    return 'NOT_ADMITTED'
  end
end
return 'OK'`)

// BenchmarkAdmissionGate measures the figure hold.lua's header cites: a hold through an
// OPEN queue's gate with the pass check inside hold.lua (one EVALSHA, one round trip)
// against the pass check as a script of its own followed by a hold with no gate (two
// EVALSHAs, two round trips). Each iteration makes one hold of each kind, in turn, so drift
// of the host weighs on both alike; it reports the median of each (one-µs/hold,
// two-µs/hold). Each hold moves the same two seats to a fresh token (TakeOver), so every
// one succeeds and publishes its delta.
//
//	go test -run '^$' -bench AdmissionGate -benchtime 20000x -count 3 ./internal/seats/
func BenchmarkAdmissionGate(b *testing.B) {
	hall := testHall(1, 6)
	now := time.UnixMilli(1_700_000_000_000)
	valid := now.Add(10 * time.Minute)
	r := testenv.NewRedis(b)
	s := &seats.Store{RDB: r.Client, Keys: r.Keys, Now: func() time.Time { return now }}
	ctx := context.Background()
	if _, err := s.Init(ctx, show, hall, nil); err != nil {
		b.Fatal(err)
	}
	s.RDB.HSet(ctx, s.Keys.Queue(show), open(1))
	s.RDB.ZAdd(ctx, s.Keys.QueuePasses(show), redis.Z{Member: "1.7", Score: float64(valid.UnixMilli())})
	admission := &seats.Admission{PassID: "1.7", ExpiresAt: valid}
	layout := seats.NewLayout(hall)
	keys := []string{s.Keys.Queue(show), s.Keys.QueuePasses(show)}
	token := 0
	hold := func(admit *seats.Admission) {
		token++
		req := seats.HoldRequest{ShowtimeID: show, Layout: layout, SeatIDs: []int{101, 102}, Token: fmt.Sprint("t", token),
			TakeOver: fmt.Sprint("t", token-1), UserID: "u", AllowGaps: true, Admission: admit}
		if err := s.Hold(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
	var one, two []time.Duration
	for b.Loop() {
		t0 := time.Now()
		hold(admission)
		t1 := time.Now()
		res, err := passCheck.Run(ctx, s.RDB, keys, now.UnixMilli(), admission.PassID, admission.ExpiresAt.UnixMilli()).Text()
		if err != nil || res != "OK" {
			b.Fatalf("pass check = %q, %v", res, err)
		}
		hold(nil)
		one, two = append(one, t1.Sub(t0)), append(two, time.Since(t1))
	}
	b.ReportMetric(median(one), "one-µs/hold")
	b.ReportMetric(median(two), "two-µs/hold")
}

// median is the median of d in µs.
func median(d []time.Duration) float64 {
	slices.Sort(d)
	return float64(d[len(d)/2]) / float64(time.Microsecond)
}
