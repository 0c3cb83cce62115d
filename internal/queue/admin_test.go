package queue_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"

	"seatflow"
	"seatflow/internal/auth"
	"seatflow/internal/queue"
	"seatflow/internal/seats"
)

// TestSetQueueInput: bad settings are BAD_USER_INPUT, a showtime not SCHEDULED
// INVALID_STATE, and neither writes anything; the defaults fill what is left out; setting
// again before opensAt changes the settings and keeps the draw.
func TestSetQueueInput(t *testing.T) {
	e := newEnv(t, 2, 5)
	ctx := context.Background()
	now := e.clock.Now()
	soon := now.Add(time.Hour)
	cases := map[string]queue.OnSaleQueueInput{
		"OpensInThePast":       {OpensAt: now.Add(-time.Second), AdmitPerMinute: 60},
		"OpensAfterTheStart":   {OpensAt: now.Add(3 * time.Hour), AdmitPerMinute: 60},
		"NoRate":               {OpensAt: soon, AdmitPerMinute: 0},
		"RateTooHigh":          {OpensAt: soon, AdmitPerMinute: 60_001},
		"NoActive":             {OpensAt: soon, AdmitPerMinute: 60, MaxActive: intp(0)},
		"PassTooLong":          {OpensAt: soon, AdmitPerMinute: 60, PassMinutes: intp(61)},
		"PartySmallerThanOne":  {OpensAt: soon, AdmitPerMinute: 60, AveragePartySize: floatp(0.5)},
		"PartyNotANumber":      {OpensAt: soon, AdmitPerMinute: 60, AveragePartySize: floatp(math.NaN())},
		"PartyLargerThanOrder": {OpensAt: soon, AdmitPerMinute: 60, AveragePartySize: floatp(11)},
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := e.q.Set(ctx, "admin", e.show, in)
			wantCode(t, err, seatflow.EINVALID)
			if st, _ := e.cat.FreshShowtime(ctx, e.show); st.HasQueue {
				t.Fatal("a refused setOnSaleQueue left the showtime with a queue")
			}
		})
	}
	q := e.setQueue(t, queue.OnSaleQueueInput{OpensAt: soon, AdmitPerMinute: 90})
	if q.MaxActive != 90 || q.PassMinutes != seatflow.DefaultPassMinutes || q.AveragePartySize != seatflow.DefaultAveragePartySize {
		t.Errorf("defaults: %+v", q)
	}
	again := e.setQueue(t, queue.OnSaleQueueInput{OpensAt: soon.Add(time.Minute), AdmitPerMinute: 30, MaxActive: intp(5)})
	if again.DrawCommitment != q.DrawCommitment || again.AdmitPerMinute != 30 || again.MaxActive != 5 || !again.OpensAt.Equal(soon.Add(time.Minute)) {
		t.Errorf("set again: %+v, want new settings and the same commitment %s", again, q.DrawCommitment)
	}
	if _, err := e.sales.OpenSales(ctx, e.show); err != nil {
		t.Fatal(err)
	}
	_, err := e.q.Set(ctx, "admin", e.show, queue.OnSaleQueueInput{OpensAt: soon, AdmitPerMinute: 60})
	wantCode(t, err, seatflow.EINVALIDSTATE)
}

// TestRemoveQueue: before opensAt the queue goes, with its entrants, and the showtime
// sells without passes; after, it is INVALID_STATE; without one, BAD_USER_INPUT. A join on
// a showtime without a queue is BAD_USER_INPUT.
func TestRemoveQueue(t *testing.T) {
	e := newEnv(t, 2, 5)
	ctx := context.Background()
	_, err := e.q.Remove(ctx, e.show)
	wantCode(t, err, seatflow.EINVALID)
	_, err = e.q.Join(ctx, e.show, "alice")
	wantCode(t, err, seatflow.EINVALID)

	e.setQueue(t, queue.OnSaleQueueInput{AdmitPerMinute: 60})
	e.join(t, e.q, "alice")
	st, err := e.q.Remove(ctx, e.show)
	if err != nil || st.HasQueue {
		t.Fatalf("remove: %+v, %v", st, err)
	}
	if n, _ := e.rdb.Exists(ctx, e.r.Keys.Queue(e.show), e.r.Keys.QueueTickets(e.show), e.r.Keys.QueueWaiting(e.show)).Result(); n != 0 {
		t.Errorf("%d of the queue's keys left in Redis", n)
	}
	if tk := e.ticket(t, "alice"); tk != nil {
		t.Errorf("ticket after the removal: %+v", tk)
	}

	q := e.setQueue(t, queue.OnSaleQueueInput{AdmitPerMinute: 60})
	if q.Waiting != 0 {
		t.Errorf("a new queue has %d waiting", q.Waiting)
	}
	e.open(t, e.q)
	_, err = e.q.Remove(ctx, e.show)
	wantCode(t, err, seatflow.EINVALIDSTATE)
}

// TestJoinsRateLimitedPerAddress: past the rate, joins from one address are RATE_LIMITED
// with retryAfterMs; another address joins.
func TestJoinsRateLimitedPerAddress(t *testing.T) {
	e := newEnv(t, 2, 5)
	q := e.instance(func(c *queue.Config) { c.JoinRate = redis_rate.PerMinute(3) })
	e.setQueue(t, queue.OnSaleQueueInput{AdmitPerMinute: 60})
	one := auth.WithClientAddr(context.Background(), "203.0.113.7")
	for i, u := range users("u", 3) {
		if _, err := q.Join(one, e.show, u); err != nil {
			t.Fatalf("join %d: %v", i, err)
		}
	}
	_, err := q.Join(one, e.show, "u3")
	wantCode(t, err, seatflow.ERATELIMITED)
	if e, _ := err.(*seatflow.Error); e == nil || e.Extensions["retryAfterMs"] == nil {
		t.Errorf("RATE_LIMITED without retryAfterMs: %v", err)
	}
	if _, err := q.Join(auth.WithClientAddr(context.Background(), "203.0.113.8"), e.show, "u3"); err != nil {
		t.Fatalf("another address: %v", err)
	}
}

// TestRedisLossRebuild: a queue whose state Redis lost is rebuilt from its record by the
// next tick, in a new epoch: passes issued before still let their holders hold (on their
// signature), admission waits until they have all run out, and a hold without a pass is
// still refused; the entrants join again, at the back.
func TestRedisLossRebuild(t *testing.T) {
	e := newEnv(t, 10, 10)
	ctx := context.Background()
	e.setQueue(t, queue.OnSaleQueueInput{AdmitPerMinute: 60, PassMinutes: intp(5)})
	for _, u := range users("u", 5) {
		e.join(t, e.q, u)
	}
	e.open(t, e.q)
	var holder string
	var pass *seatflow.QueueTicket
	for _, u := range users("u", 5) {
		if tk := e.ticket(t, u); tk.Status == seatflow.QueueAdmitted {
			holder, pass = u, tk
		}
	}
	if pass == nil {
		t.Fatal("nobody admitted")
	}
	before := e.status(t)

	// Redis loses the queue (a restart without persistence): every key of it is gone.
	for _, k := range []string{e.r.Keys.Queue(e.show), e.r.Keys.QueueWaiting(e.show), e.r.Keys.QueueTickets(e.show),
		e.r.Keys.QueueUsers(e.show), e.r.Keys.QueueSeen(e.show), e.r.Keys.QueuePasses(e.show), e.r.Keys.QueueRate(e.show),
		e.r.Keys.QueueLease(e.show)} {
		e.rdb.Del(ctx, k)
	}
	hold := func(user string, a seats.Admission, seatIDs ...int) error {
		return e.store.Hold(ctx, seats.HoldRequest{ShowtimeID: e.show, Layout: seats.NewLayout(e.hall), SeatIDs: seatIDs,
			Token: user + "-token", UserID: user, AllowGaps: true, Admission: &a})
	}
	ids := e.seatIDs()
	// Even before the rebuild: the hold is still gated (MySQL says the showtime has a queue).
	wantCode(t, hold("u9", seats.Admission{}, ids[0]), seatflow.ENOTADMITTED)

	e.clock.Advance(time.Second)
	if tk := e.tick(t, e.q); tk.Outcome != "REBUILT" {
		t.Fatalf("tick on a lost state: %+v, want REBUILT", tk)
	}
	after := e.status(t)
	if after.Phase != seatflow.QueueOpen || after.DrawCommitment != before.DrawCommitment || after.Waiting != 0 {
		t.Fatalf("rebuilt queue = %+v", after)
	}
	if tk := e.ticket(t, holder); tk != nil {
		t.Errorf("a ticket survived the loss: %+v", tk)
	}
	// The pass issued before the loss still holds; no pass is still refused.
	issued := e.q.VerifyPass(*pass.Pass, holder, e.show)
	if issued.PassID == "" {
		t.Fatal("the pass issued before the loss no longer verifies")
	}
	if err := hold(holder, issued, ids[0], ids[1]); err != nil {
		t.Fatalf("hold with a pass issued before the loss: %v", err)
	}
	wantCode(t, hold("u9", seats.Admission{}, ids[2]), seatflow.ENOTADMITTED)

	// Entrants join again (at the back); admission waits for the old passes to run out.
	for _, u := range users("v", 3) {
		if tk := e.join(t, e.q, u); tk.Status != seatflow.QueueWaiting || tk.Position == nil {
			t.Fatalf("join after the rebuild: %+v", tk)
		}
	}
	e.clock.Advance(time.Second)
	if tk := e.tick(t, e.q); tk.Admitted != 0 {
		t.Fatalf("admitted %d while the lost state's passes may still be in use", tk.Admitted)
	}
	e.clock.Advance(5 * time.Minute)
	for _, u := range users("v", 3) {
		e.ticket(t, u)
	}
	if tk := e.tick(t, e.q); tk.Admitted != 1 {
		t.Fatalf("once the old passes ran out: %+v, want admission to resume", tk)
	}
}
