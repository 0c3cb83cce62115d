package booking_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"seatflow"
	"seatflow/ent/order"
)

// paidOrHeld is the number of seats the user's active orders cover in MySQL.
func (e *env) paidOrHeld(t testing.TB, userID string) int {
	t.Helper()
	ctx := context.Background()
	os, err := e.db.Order.Query().Where(order.UserID(userID), order.ShowtimeID(e.show),
		order.StatusIn(seatflow.OrderPending, seatflow.OrderPaid)).WithSeats().All(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, o := range os {
		n += len(o.Edges.Seats)
	}
	return n
}

// The limit holds whatever Redis lost: the user's count in the limits hash is gone (a seat
// hash rebuilt while a hold was between Redis and MySQL misses it), the hold script lets
// the next hold through, and the hold's transaction refuses it from MySQL's count. The
// seats go back and the limits hash is corrected, so the hold after is refused in Redis.
func TestPurchaseLimitCheckedInMySQL(t *testing.T) {
	e := newEnv(t, 3, 8, showOpts{limit: 2})
	ctx := context.Background()
	e.mustHold(t, "alice", "k1", e.seat("B", 1), e.seat("B", 2))

	// Redis forgets alice's count, as after a rebuild that missed her hold.
	if err := e.rdb.HDel(ctx, e.store.Keys.Limits(e.show), "alice").Err(); err != nil {
		t.Fatal(err)
	}
	_, err := e.hold("alice", "k2", e.seat("C", 1), e.seat("C", 2))
	wantCode(t, err, seatflow.ELIMIT)
	if got := e.paidOrHeld(t, "alice"); got != 2 {
		t.Fatalf("alice's seats in MySQL = %d, want 2 (the limit)", got)
	}
	for _, n := range []int{1, 2} {
		if st := e.state(t, e.seat("C", n)); st.Status != seatflow.SeatAvailable {
			t.Fatalf("seat C%d = %+v after the refused hold, want AVAILABLE", n, st)
		}
	}
	if got := e.count(t, "alice"); got != 2 {
		t.Fatalf("alice's count in Redis = %d after the refusal, want 2 (corrected from MySQL)", got)
	}
	// Within the limit is still fine for someone else.
	e.mustHold(t, "bob", "k3", e.seat("C", 1), e.seat("C", 2))
}

// Holds of one user racing each other after Redis lost the counts: Redis lets every one
// through (its count is far below the truth), the transactions count in MySQL with a
// locking read, and at most the limit's seats end up held. Each seat is its own hold, so
// no two holds compete for a seat: only the limit can refuse them.
func TestPurchaseLimitUnderConcurrentHoldsAfterRedisLoss(t *testing.T) {
	const limit, holders = 3, 16
	e := newEnv(t, 4, 8, showOpts{limit: limit, allowGaps: true})
	ctx := context.Background()
	// A count far below the truth lets every hold past the script.
	if err := e.rdb.HSet(ctx, e.store.Keys.Limits(e.show), "alice", -1000).Err(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, holders)
	start := make(chan struct{})
	for i := range holders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			row := string(rune('A' + i/8))
			_, errs[i] = e.hold("alice", fmt.Sprintf("k%d", i), e.seat(row, i%8+1))
		}()
	}
	close(start)
	wg.Wait()
	held, refused := 0, 0
	var gaveUp []int // holds still deadlocked after their retries
	for i, err := range errs {
		switch seatflow.ErrorCode(err) {
		case "":
			if err != nil {
				t.Fatalf("hold %d: %v", i, err)
			}
			held++
		case seatflow.ELIMIT:
			refused++
		case seatflow.EUNAVAILABLE:
			gaveUp = append(gaveUp, i)
		default:
			t.Fatalf("hold %d: %v, want success, PURCHASE_LIMIT_EXCEEDED or SERVICE_UNAVAILABLE", i, err)
		}
	}
	if got := e.paidOrHeld(t, "alice"); got != held || got > limit {
		t.Fatalf("alice holds %d seats in MySQL (%d holds answered OK), limit %d", got, held, limit)
	}
	if refused > 0 && held < limit {
		t.Fatalf("%d holds succeeded of a limit of %d and %d were refused for the limit: the check refused holds within it",
			held, limit, refused)
	}
	// A hold that met its racers in every one of its tries answered SERVICE_UNAVAILABLE (a
	// loaded database makes more of them meet); the customer tries again, and those tries,
	// one at a time, fill the limit exactly.
	for _, i := range gaveUp {
		row := string(rune('A' + i/8))
		_, err := e.hold("alice", fmt.Sprintf("again%d", i), e.seat(row, i%8+1))
		switch {
		case err == nil:
			held++
		case seatflow.ErrorCode(err) != seatflow.ELIMIT:
			t.Fatalf("hold %d tried again alone: %v, want success or PURCHASE_LIMIT_EXCEEDED", i, err)
		}
	}
	if held != limit {
		t.Fatalf("%d holds succeeded of a limit of %d (%d refused for the limit, %d tried again alone)",
			held, limit, refused, len(gaveUp))
	}
	if got := e.paidOrHeld(t, "alice"); got != held {
		t.Fatalf("alice holds %d seats in MySQL, %d holds answered OK", got, held)
	}
	// Every refused hold gave its seat back.
	states, _, err := e.store.States(ctx, e.show)
	if err != nil {
		t.Fatal(err)
	}
	inRedis := 0
	for _, st := range states {
		if st.Status != seatflow.SeatAvailable {
			inRedis++
		}
	}
	if inRedis != held {
		t.Fatalf("%d seats taken in Redis, want the %d held", inRedis, held)
	}
}

// A late payment takes its seats again within the limit, counted in MySQL too: the
// customer held others since the order expired and Redis lost that count, so the payment
// is refunded (ORDER_EXPIRED) instead of putting the customer over the limit.
func TestLatePaymentLimitCheckedInMySQL(t *testing.T) {
	e := newEnv(t, 2, 8, showOpts{limit: 2})
	ctx := context.Background()
	o := e.mustHold(t, "alice", "k1", e.seat("A", 1), e.seat("A", 2))
	e.clock.Advance(16 * time.Minute)
	if n, err := e.svc.ExpireDue(ctx); err != nil || n != 1 {
		t.Fatalf("ExpireDue = %d, %v", n, err)
	}
	e.mustHold(t, "alice", "k2", e.seat("B", 1), e.seat("B", 2))
	if err := e.rdb.HDel(ctx, e.store.Keys.Limits(e.show), "alice").Err(); err != nil {
		t.Fatal(err)
	}
	_, err := e.svc.PayOrder(ctx, "alice", o.ID, "late")
	wantCode(t, err, seatflow.EORDEREXPIRED)
	if got := e.paidOrHeld(t, "alice"); got != 2 {
		t.Fatalf("alice's seats in MySQL = %d after the late payment, want 2 (the limit)", got)
	}
	got, _ := e.svc.Order(ctx, "alice", o.ID)
	if got.Status != seatflow.OrderExpired || !got.RefundRequired {
		t.Fatalf("late-paid order = %+v, want EXPIRED with refundRequired", got)
	}
	for _, n := range []int{1, 2} {
		if st := e.state(t, e.seat("A", n)); st.Status != seatflow.SeatAvailable {
			t.Fatalf("seat A%d = %+v, want AVAILABLE (nothing half-taken)", n, st)
		}
	}
}

// Holds of different customers never wait on each other for the limit's count: their
// locking reads match only their own rows (READ COMMITTED takes no gap locks), so a rush
// of buyers is not turned into deadlocks and SERVICE_UNAVAILABLE answers.
func TestPurchaseLimitCountLocksOnlyTheCustomer(t *testing.T) {
	const buyers, rounds = 16, 20
	e := newEnv(t, 20, 16, showOpts{limit: 6, allowGaps: true})
	for r := range rounds {
		var wg sync.WaitGroup
		errs := make([]error, buyers)
		start := make(chan struct{})
		for i := range buyers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				n := r*buyers + i // every hold by a new buyer, each of its own seat
				_, errs[i] = e.hold(fmt.Sprintf("buyer-%03d", n), "k", e.seat(string(rune('A'+r)), i+1))
			}()
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d, buyer %d: %v", r, i, err)
			}
		}
	}
}
