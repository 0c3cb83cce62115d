package waitlist_test

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"

	"seatflow"
	"seatflow/ent/order"
	"seatflow/ent/orderseat"
	"seatflow/ent/waitlistentry"
	"seatflow/internal/booking"
	"seatflow/internal/tooling/testenv"
	"seatflow/internal/waitlist"
)

// TestJoinRefusals: each bad join has its own code and changes nothing.
func TestJoinRefusals(t *testing.T) {
	e := newEnv(t, 1, 4)
	ctx := context.Background()
	join := func(user string, in waitlist.JoinInput) string {
		_, err := e.wl.Join(ctx, user, in)
		return code(err)
	}
	if got := join("ann", waitlist.JoinInput{ShowtimeID: e.show, Seats: 1}); got != seatflow.ENOTSOLDOUT {
		t.Fatalf("join with seats available: %q, want %s", got, seatflow.ENOTSOLDOUT)
	}
	e.hold("bob", "A1", "A2")
	e.hold("cat", "A3", "A4")
	cases := []struct {
		name, user string
		in         waitlist.JoinInput
		want       string
	}{
		{"signed out", "", waitlist.JoinInput{ShowtimeID: e.show, Seats: 1}, seatflow.EUNAUTHENTICATED},
		{"unknown showtime", "ann", waitlist.JoinInput{ShowtimeID: e.show + 1000, Seats: 1}, seatflow.ENOTFOUND},
		{"no seats", "ann", waitlist.JoinInput{ShowtimeID: e.show, Seats: 0}, seatflow.EINVALID},
		{"eleven seats", "ann", waitlist.JoinInput{ShowtimeID: e.show, Seats: 11}, seatflow.EINVALID},
		{"over the limit", "ann", waitlist.JoinInput{ShowtimeID: e.show, Seats: 7}, seatflow.ELIMIT},
		{"types not one per seat", "ann", waitlist.JoinInput{ShowtimeID: e.show, Seats: 2, TicketTypes: []seatflow.TicketType{seatflow.TicketChild}}, seatflow.EINVALID},
		{"unknown type", "ann", waitlist.JoinInput{ShowtimeID: e.show, Seats: 1, TicketTypes: []seatflow.TicketType{"DOG"}}, seatflow.EINVALID},
	}
	for _, c := range cases {
		if got := join(c.user, c.in); got != c.want {
			t.Errorf("%s: %q, want %s", c.name, got, c.want)
		}
	}
	if n := e.db.WaitlistEntry.Query().CountX(ctx); n != 0 {
		t.Fatalf("refused joins left %d entries", n)
	}
	first := e.join("ann", 2)
	if first.Status != seatflow.WaitlistWaiting || pos(first) != 1 || first.Waiting != 1 {
		t.Fatalf("first entry %+v, want WAITING at 1 of 1", first)
	}
	if got := join("ann", waitlist.JoinInput{ShowtimeID: e.show, Seats: 1}); got != seatflow.EWAITLISTED {
		t.Fatalf("second entry: %q, want %s", got, seatflow.EWAITLISTED)
	}
	// Someone else's entry is not found, whatever is asked of it.
	if _, err := e.wl.Leave(ctx, "bob", first.ID); code(err) != seatflow.ENOTFOUND {
		t.Fatalf("bob leaves ann's entry: %v", err)
	}
	if _, err := e.wl.DeclineOffer(ctx, "bob", first.ID); code(err) != seatflow.ENOTFOUND {
		t.Fatalf("bob declines ann's entry: %v", err)
	}
	if _, err := e.wl.DeclineOffer(ctx, "ann", first.ID); code(err) != seatflow.EINVALIDSTATE {
		t.Fatalf("declining without an offer: %v", err)
	}
	if n, _ := e.r.Client.Get(ctx, e.r.Keys.Waitlist(e.show)).Int(); n != 1 {
		t.Fatalf("waiting count %d, want 1", n)
	}
	left, err := e.wl.Leave(ctx, "ann", first.ID)
	if err != nil || left.Status != seatflow.WaitlistLeft {
		t.Fatalf("leave: %+v, %v", left, err)
	}
	if n, _ := e.r.Client.Exists(ctx, e.r.Keys.Waitlist(e.show)).Result(); n != 0 {
		t.Fatal("the waiting count outlived the last entry")
	}
	// Having left, ann may join again, at the back.
	again := e.join("ann", 1)
	if again.ID == first.ID || pos(again) != 1 {
		t.Fatalf("joined again: %+v", again)
	}
}

// TestOffersInJoinOrder: returned seats go to the first entries whose size fits, held as
// pending orders before anyone else can hold them; a declined offer passes to the next
// entry, and seats no entry fits go on sale.
func TestOffersInJoinOrder(t *testing.T) {
	e := newEnv(t, 1, 6)
	ctx := context.Background()
	bob := e.hold("bob", "A1", "A2")
	e.hold("cat", "A3", "A4", "A5", "A6")
	ann := e.join("ann", 3) // first, but wants three
	dan := e.join("dan", 2)
	eve := e.join("eve", 1)

	if _, err := e.book.CancelOrder(ctx, "bob", bob.ID); err != nil {
		t.Fatal(err)
	}
	// Returned in the script that freed them: nobody may hold them meanwhile.
	if s := e.states(); s["A1"] != "RETURNED" || s["A2"] != "RETURNED" {
		t.Fatalf("after the cancel: %v, want A1 and A2 returned", s)
	}
	_, err := e.book.HoldSeats(ctx, "zed", booking.HoldSeatsInput{ShowtimeID: e.show, SeatIDs: []int{e.seat("A1")}, IdempotencyKey: "z"})
	if code(err) != seatflow.ESEATSUNAVAILABLE {
		t.Fatalf("a hold of a returned seat: %v, want %s", err, seatflow.ESEATSUNAVAILABLE)
	}
	if n, err := e.wl.OfferReturned(ctx, e.show); err != nil || n != 1 {
		t.Fatalf("offer: %d offers, %v; want 1", n, err)
	}
	got := e.entry("dan", dan.ID)
	if got.Status != seatflow.WaitlistOffered || got.Offer == nil || len(got.Offer.SeatIDs) != 2 {
		t.Fatalf("dan (2 seats, second in line): %+v, want the two seats offered", got)
	}
	if want := e.clock.Now().Add(10 * time.Minute); !got.Offer.ExpiresAt.Equal(want) {
		t.Fatalf("offer expires at %s, want %s", got.Offer.ExpiresAt, want)
	}
	o, err := e.book.Order(ctx, "dan", got.Offer.OrderID)
	if err != nil || o.Status != seatflow.OrderPending || o.AmountCents != 2000 {
		t.Fatalf("dan's offer order: %+v, %v", o, err)
	}
	if s := e.states(); s["A1"] != "HELD" || s["A2"] != "HELD" {
		t.Fatalf("offered seats: %v, want HELD", s)
	}
	if a := e.entry("ann", ann.ID); a.Status != seatflow.WaitlistWaiting || pos(a) != 1 || a.Waiting != 2 {
		t.Fatalf("ann, passed over: %+v, want WAITING first of 2", a)
	}
	if v := e.entry("eve", eve.ID); pos(v) != 2 {
		t.Fatalf("eve: position %d, want 2", pos(v))
	}

	// dan declines: the seats pass to the next entry that fits (eve, one seat), and the
	// other, which nobody waiting fits (ann wants three), goes on sale.
	if d, err := e.wl.DeclineOffer(ctx, "dan", dan.ID); err != nil || d.Status != seatflow.WaitlistDeclined {
		t.Fatalf("decline: %+v, %v", d, err)
	}
	if n, err := e.wl.OfferReturned(ctx, e.show); err != nil || n != 1 {
		t.Fatalf("offer after the decline: %d, %v; want 1", n, err)
	}
	if v := e.entry("eve", eve.ID); v.Status != seatflow.WaitlistOffered || len(v.Offer.SeatIDs) != 1 || v.Offer.SeatIDs[0] != e.seat("A1") {
		t.Fatalf("eve: %+v, want A1 offered", v)
	}
	if s := e.states(); s["A2"] != "AVAILABLE" {
		t.Fatalf("A2, which no entry fits: %s, want AVAILABLE", s["A2"])
	}
	// eve pays: the offer is accepted, and counted as sold through the list.
	if _, err := e.book.PayOrder(ctx, "eve", e.entry("eve", eve.ID).Offer.OrderID, "tok_visa"); err != nil {
		t.Fatal(err)
	}
	if v := e.entry("eve", eve.ID); v.Status != seatflow.WaitlistAccepted {
		t.Fatalf("eve after paying: %s", v.Status)
	}
	r, err := e.wl.Report(ctx, e.show)
	if err != nil {
		t.Fatal(err)
	}
	want := seatflow.WaitlistReport{ShowtimeID: e.show, Entries: 3, Waiting: 1, Offered: 2, Accepted: 1, Declined: 1, SeatsSold: 1}
	if *r != want {
		t.Fatalf("report %+v, want %+v", *r, want)
	}
	// A declined entry's user may join again, once the showtime is sold out again.
	e.hold("zed", "A2")
	e.join("dan", 1)
}

// TestOfferExpiresToNext: an offer left unpaid expires like any hold, and its seats go
// to the next entry.
func TestOfferExpiresToNext(t *testing.T) {
	e := newEnv(t, 1, 2)
	ctx := context.Background()
	bob := e.hold("bob", "A1", "A2")
	ann := e.join("ann", 2)
	dan := e.join("dan", 2)
	if _, err := e.book.CancelOrder(ctx, "bob", bob.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.wl.OfferReturned(ctx, e.show); err != nil {
		t.Fatal(err)
	}
	offer := e.entry("ann", ann.ID).Offer
	// The next entry waits for these seats: an offer cannot be kept longer, and no
	// customer's own key may pass for an offer's.
	if _, err := e.book.ExtendHold(ctx, "ann", offer.OrderID); code(err) != seatflow.EINVALIDSTATE {
		t.Fatalf("extending an offer: %v, want %s", err, seatflow.EINVALIDSTATE)
	}
	_, err := e.book.HoldSeats(ctx, "ann", booking.HoldSeatsInput{ShowtimeID: e.show, SeatIDs: []int{e.seat("A1")},
		IdempotencyKey: booking.OfferKey(999)})
	if code(err) != seatflow.EINVALID {
		t.Fatalf("a hold with an offer's key: %v, want %s", err, seatflow.EINVALID)
	}
	e.clock.Advance(10*time.Minute + time.Second)
	if ok, err := e.book.Expire(ctx, offer.OrderID); err != nil || !ok {
		t.Fatalf("expire: %t, %v", ok, err)
	}
	if a := e.entry("ann", ann.ID); a.Status != seatflow.WaitlistExpired {
		t.Fatalf("ann: %s, want EXPIRED", a.Status)
	}
	if _, err := e.wl.OfferReturned(ctx, e.show); err != nil {
		t.Fatal(err)
	}
	if d := e.entry("dan", dan.ID); d.Status != seatflow.WaitlistOffered || len(d.Offer.SeatIDs) != 2 {
		t.Fatalf("dan: %+v, want both seats offered", d)
	}
	// Nobody waits now: a seat that comes back is free again.
	if _, err := e.wl.DeclineOffer(ctx, "dan", dan.ID); err != nil {
		t.Fatal(err)
	}
	if s := e.states(); s["A1"] != "AVAILABLE" || s["A2"] != "AVAILABLE" {
		t.Fatalf("with nobody waiting: %v, want AVAILABLE", s)
	}
}

// TestTwoInstancesOfferOnce: two instances offering the same returned seats, kicked by
// releases that race each other, offer each seat once and each entry once, in join order;
// with the offer lock, and with the lock lost all the time (as when it expires under a
// slow pass), so the two offer at once.
func TestTwoInstancesOfferOnce(t *testing.T) {
	t.Run("locked", func(t *testing.T) { twoInstancesOfferOnce(t, false) })
	t.Run("lock lost", func(t *testing.T) { twoInstancesOfferOnce(t, true) })
}

func twoInstancesOfferOnce(t *testing.T, loseLock bool) {
	e := newEnv(t, 4, 10) // 40 seats
	ctx := context.Background()
	var orders []*seatflow.Order
	for i := range 20 {
		row := string(rune('A' + i/5))
		n := 2 * (i % 5)
		orders = append(orders, e.hold("holder"+string(rune('a'+i)), row+itoa(n+1), row+itoa(n+2)))
	}
	var entries []*seatflow.WaitlistEntry
	for i := range 30 {
		entries = append(entries, e.join("w"+itoa(i), 1+i%3))
	}
	_, book2, wl2 := e.instance(booking.Config{})
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, w := range []*waitlist.Service{e.wl, wl2} {
		wg.Add(1)
		go func() { defer wg.Done(); _ = w.Run(runCtx) }()
	}
	if loseLock {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for runCtx.Err() == nil {
				e.r.Client.Del(ctx, e.r.Keys.WaitlistLock(e.show))
				time.Sleep(time.Millisecond)
			}
		}()
	}
	// Both instances cancel orders at once (each cancel returns two seats).
	var cancels sync.WaitGroup
	for i, o := range orders {
		b := e.book
		if i%2 == 1 {
			b = book2
		}
		cancels.Add(1)
		go func() {
			defer cancels.Done()
			if _, err := b.CancelOrder(ctx, o.UserID, o.ID); err != nil {
				t.Error(err)
			}
		}()
	}
	cancels.Wait()
	// Until every seat is offered or on sale (none returned or held for an offer in flight).
	deadline := time.Now().Add(10 * time.Second)
	for e.pendingSeats()+e.count("AVAILABLE") != 40 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	wg.Wait()
	// Every seat is in at most one pending order (pendingSeats), and every entry has at most one.
	offeredSeats, available := e.pendingSeats(), e.count("AVAILABLE")
	if offeredSeats+available != 40 {
		t.Fatalf("%d seats offered and %d on sale, want 40 in all", offeredSeats, available)
	}
	if available > 0 {
		if n := e.db.WaitlistEntry.Query().Where(waitlistentry.StateEQ(waitlistentry.StateWAITING), waitlistentry.SeatsLTE(available)).CountX(ctx); n > 0 {
			t.Fatalf("%d seats went on sale while %d entries that fit them wait", available, n)
		}
	}
	offered := e.db.WaitlistEntry.Query().Where(waitlistentry.StateEQ(waitlistentry.StateOFFERED)).Order(waitlistentry.ByID()).AllX(ctx)
	total := 0
	for _, en := range offered {
		total += en.Seats
	}
	if total != offeredSeats {
		t.Fatalf("the offered entries want %d seats, %d were offered", total, offeredSeats)
	}
	// Seats came back two at a time, so an entry of three may have been passed over while
	// two were left; but an entry of one or two is never passed over for a later one.
	lastSmall := 0
	for _, en := range offered {
		if en.Seats <= 2 {
			lastSmall = en.ID
		}
	}
	for _, en := range entries {
		if en.Seats <= 2 && en.ID < lastSmall {
			got := e.entry(en.UserID, en.ID)
			if got.Status != seatflow.WaitlistOffered {
				t.Errorf("entry %d (%d seats) is %s while later entry %d was offered", en.ID, en.Seats, got.Status, lastSmall)
			}
		}
	}
	if n, _ := e.r.Client.Get(ctx, e.r.Keys.Waitlist(e.show)).Int(); n != 30-len(offered) {
		t.Fatalf("waiting count %d, want %d", n, 30-len(offered))
	}
}

// TestWatchPushesOffer: a watcher of an entry is pushed its position, then the offer
// within a second of it, and the stream ends after a final status.
func TestWatchPushesOffer(t *testing.T) {
	e := newEnv(t, 1, 2)
	ctx := context.Background()
	bob := e.hold("bob", "A1", "A2")
	ann := e.join("ann", 1)
	dan := e.join("dan", 2)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := e.wl.Watch(wctx, "dan", dan.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.wl.Watch(wctx, "ann", dan.ID); code(err) != seatflow.ENOTFOUND {
		t.Fatalf("watching someone else's entry: %v", err)
	}
	if first := <-stream; pos(first) != 2 {
		t.Fatalf("first push: position %d, want 2", pos(first))
	}
	if _, err := e.wl.Leave(ctx, "ann", ann.ID); err != nil {
		t.Fatal(err)
	}
	next := recv(t, stream, 2*time.Second)
	if pos(next) != 1 {
		t.Fatalf("after ann left: position %d, want 1", pos(next))
	}
	if _, err := e.book.CancelOrder(ctx, "bob", bob.ID); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := e.wl.OfferReturned(ctx, e.show); err != nil {
		t.Fatal(err)
	}
	offered := recv(t, stream, time.Second)
	if offered.Status != seatflow.WaitlistOffered || offered.Offer == nil {
		t.Fatalf("push after the offer: %+v", offered)
	}
	t.Logf("offer pushed %s after it was made", time.Since(start))
	if _, err := e.wl.DeclineOffer(ctx, "dan", dan.ID); err != nil {
		t.Fatal(err)
	}
	if last := recv(t, stream, 2*time.Second); last.Status != seatflow.WaitlistDeclined {
		t.Fatalf("last push: %s", last.Status)
	}
	if _, open := <-stream; open {
		t.Fatal("the stream stayed open after a final entry")
	}
}

func recv(t *testing.T, c <-chan *seatflow.WaitlistEntry, within time.Duration) *seatflow.WaitlistEntry {
	t.Helper()
	select {
	case e, ok := <-c:
		if !ok {
			t.Fatal("the stream closed")
		}
		return e
	case <-time.After(within):
		t.Fatalf("nothing pushed within %s", within)
	}
	return nil
}

// pos is e's position, 0 without one.
func pos(e *seatflow.WaitlistEntry) int {
	if e.Position == nil {
		return 0
	}
	return *e.Position
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestClosedWithTheSale: waiting entries end CLOSED when the showtime's sales end, and no
// entry joins then.
func TestClosedWithTheSale(t *testing.T) {
	e := newEnv(t, 1, 1)
	ctx := context.Background()
	e.hold("bob", "A1")
	ann := e.join("ann", 1)
	e.clock.Advance(2 * time.Hour) // the showtime started an hour ago: its sales closed
	if got := e.entry("ann", ann.ID); got.Status != seatflow.WaitlistClosed || got.Position != nil {
		t.Fatalf("after the sale: %+v, want CLOSED without a position", got)
	}
	if _, err := e.wl.Join(ctx, "dan", waitlist.JoinInput{ShowtimeID: e.show, Seats: 1}); code(err) != seatflow.ENOTONSALE {
		t.Fatalf("joining after the sale: %v, want %s", err, seatflow.ENOTONSALE)
	}
}

// TestEveryReturnOffers: seats come back to the list from a refunded order, from some
// seats of a paid order refunded, and from house seats given back, as they do from an
// expired or cancelled hold.
func TestEveryReturnOffers(t *testing.T) {
	e := newEnv(t, 1, 6)
	ctx := context.Background()
	paid := e.hold("bob", "A1", "A2")
	some := e.hold("cat", "A3", "A4")
	for _, o := range []*seatflow.Order{paid, some} {
		if _, err := e.book.PayOrder(ctx, o.UserID, o.ID, "ref"); err != nil {
			t.Fatal(err)
		}
	}
	if refused, err := e.store.Block(ctx, e.show, []int{e.seat("A5"), e.seat("A6")}); err != nil || len(refused) > 0 {
		t.Fatalf("block: %v, %v", refused, err)
	}
	entries := []*seatflow.WaitlistEntry{e.join("ann", 2), e.join("dan", 1), e.join("eve", 2)}
	steps := []struct {
		name  string
		give  func() error
		entry int
	}{
		{"a refunded order", func() error { _, err := e.book.RefundOrder(ctx, paid.ID); return err }, 0},
		{"a refunded seat", func() error { _, err := e.book.RefundSeats(ctx, "admin", some.ID, []int{e.seat("A3")}); return err }, 1},
		{"house seats given back", func() error { _, err := e.store.Unblock(ctx, e.show, []int{e.seat("A5"), e.seat("A6")}); return err }, 2},
	}
	for _, st := range steps {
		if err := st.give(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if _, err := e.wl.OfferReturned(ctx, e.show); err != nil {
			t.Fatal(err)
		}
		en := entries[st.entry]
		if got := e.entry(en.UserID, en.ID); got.Status != seatflow.WaitlistOffered || len(got.Offer.SeatIDs) != en.Seats {
			t.Fatalf("after %s: %s's entry %+v, want %d seats offered", st.name, en.UserID, got, en.Seats)
		}
	}
}

// TestExpiriesRaceReleases: offers expiring on two instances at once (each expired by
// both), while other holds are cancelled and both instances offer: every seat ends in one
// pending order or on sale, none lost in between and none in two orders.
func TestExpiriesRaceReleases(t *testing.T) {
	e := newEnv(t, 2, 10) // 20 seats
	ctx := context.Background()
	var holds []*seatflow.Order
	for i := range 10 {
		row := string(rune('A' + i/5))
		n := 2 * (i % 5)
		holds = append(holds, e.hold("holder"+itoa(i), row+itoa(n+1), row+itoa(n+2)))
	}
	for i := range 20 {
		e.join("w"+itoa(i), 1+i%2)
	}
	// The first five holds come back and are offered.
	for _, o := range holds[:5] {
		if _, err := e.book.CancelOrder(ctx, o.UserID, o.ID); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.wl.OfferReturned(ctx, e.show); err != nil {
		t.Fatal(err)
	}
	offers := e.db.Order.Query().Where(order.StatusEQ(seatflow.OrderPending), order.IdempotencyKeyHasPrefix("waitlist-entry:")).AllX(ctx)
	if len(offers) == 0 {
		t.Fatal("no offers to expire")
	}
	e.clock.Advance(10*time.Minute + time.Second) // the offers are due; the holds (15 minutes) not yet
	_, book2, wl2 := e.instance(booking.Config{})
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, w := range []*waitlist.Service{e.wl, wl2} {
		wg.Add(1)
		go func() { defer wg.Done(); _ = w.Run(runCtx) }()
	}
	var work sync.WaitGroup
	for _, o := range offers {
		for _, b := range []*booking.Service{e.book, book2} {
			work.Add(1)
			go func() { defer work.Done(); _, _ = b.Expire(ctx, o.ID) }()
		}
	}
	for i, o := range holds[5:] {
		b := []*booking.Service{e.book, book2}[i%2]
		work.Add(1)
		go func() {
			defer work.Done()
			if _, err := b.CancelOrder(ctx, o.UserID, o.ID); err != nil {
				t.Error(err)
			}
		}()
	}
	work.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for e.pendingSeats()+e.count("AVAILABLE") != 20 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	wg.Wait()
	if got := e.pendingSeats() + e.count("AVAILABLE"); got != 20 {
		t.Fatalf("%d seats pending or on sale, want 20: %v", got, e.states())
	}
	for _, o := range offers {
		en := e.db.WaitlistEntry.Query().Where(waitlistentry.OrderID(o.ID)).OnlyX(ctx)
		if got := e.entry(en.UserID, en.ID); got.Status != seatflow.WaitlistExpired {
			t.Fatalf("entry of expired offer %d: %s", o.ID, got.Status)
		}
	}
}

// pendingSeats counts the seats of pending orders, failing on a seat in two of them.
func (e *env) pendingSeats() int {
	e.t.Helper()
	lines := e.db.OrderSeat.Query().Where(orderseat.HasOrderWith(order.StatusEQ(seatflow.OrderPending))).AllX(context.Background())
	seen := map[int]bool{}
	for _, l := range lines {
		if seen[l.SeatID] {
			e.t.Fatalf("seat %d is in two pending orders", l.SeatID)
		}
		seen[l.SeatID] = true
	}
	return len(lines)
}

// count counts the seats in state (as states writes them).
func (e *env) count(state string) int {
	n := 0
	for _, st := range e.states() {
		if st == state {
			n++
		}
	}
	return n
}

// TestOffersSeatsTogether: an entry is offered seats side by side when some came back.
func TestOffersSeatsTogether(t *testing.T) {
	e := newEnv(t, 1, 6)
	ctx := context.Background()
	bob := e.hold("bob", "A1")
	e.hold("cat", "A2")
	dan := e.hold("dan", "A3", "A4")
	e.hold("fay", "A5", "A6")
	ann := e.join("ann", 2)
	eve := e.join("eve", 1)
	for _, o := range []*seatflow.Order{bob, dan} {
		if _, err := e.book.CancelOrder(ctx, o.UserID, o.ID); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.wl.OfferReturned(ctx, e.show); err != nil {
		t.Fatal(err)
	}
	if got := e.entry("ann", ann.ID).Offer; got == nil || !slices.Equal(got.SeatIDs, []int{e.seat("A3"), e.seat("A4")}) {
		t.Fatalf("ann's offer %+v, want A3 and A4 together", got)
	}
	if got := e.entry("eve", eve.ID).Offer; got == nil || !slices.Equal(got.SeatIDs, []int{e.seat("A1")}) {
		t.Fatalf("eve's offer %+v, want A1", got)
	}
}

// TestJoinWhenTheQueueSaysSoldOut: a showtime whose on-sale queue is SOLD_OUT takes
// entries even while a seat shows AVAILABLE (one given back after the queue sold out);
// the queue's state is written here as package queue writes it.
func TestJoinWhenTheQueueSaysSoldOut(t *testing.T) {
	e := newEnv(t, 1, 2)
	ctx := context.Background()
	e.hold("bob", "A1")
	if _, err := e.wl.Join(ctx, "ann", waitlist.JoinInput{ShowtimeID: e.show, Seats: 1}); code(err) != seatflow.ENOTSOLDOUT {
		t.Fatalf("before the queue sold out: %v, want %s", err, seatflow.ENOTSOLDOUT)
	}
	e.r.Client.HSet(ctx, e.r.Keys.Queue(e.show), "phase", string(seatflow.QueueSoldOut))
	if en := e.join("ann", 1); en.Status != seatflow.WaitlistWaiting {
		t.Fatalf("with the queue SOLD_OUT: %+v", en)
	}
}

// TestJoinsAndLeavesAreRateLimited: joining and leaving spend the customer's order
// changes, so a client cannot churn entries.
func TestJoinsAndLeavesAreRateLimited(t *testing.T) {
	e := newEnv(t, 1, 1)
	ctx := context.Background()
	e.hold("bob", "A1")
	_, _, wl := e.instance(booking.Config{OrderRate: redis_rate.PerMinute(3)})
	var err error
	for i := 0; i < 4 && err == nil; i++ {
		var en *seatflow.WaitlistEntry
		if en, err = wl.Join(ctx, "ann", waitlist.JoinInput{ShowtimeID: e.show, Seats: 1}); err == nil {
			_, err = wl.Leave(ctx, "ann", en.ID)
		}
	}
	if code(err) != seatflow.ERATELIMITED {
		t.Fatalf("joining and leaving in a loop: %v, want %s", err, seatflow.ERATELIMITED)
	}
}

// TestNoLoneCompanionOffered: a companion seat that comes back without its accessible seat
// is offered to no party on its own (the companion rule of holds); it goes on sale, where
// holds keep the rule.
func TestNoLoneCompanionOffered(t *testing.T) {
	e := newEnvWith(t, testenv.ShowtimeSpec{Rows: 1, PerRow: 3, AllowGaps: true,
		Kinds:  map[string]seatflow.SeatKind{"A1": seatflow.SeatAccessible, "A2": seatflow.SeatCompanion},
		Prices: map[seatflow.SeatKind]int{seatflow.SeatStandard: 1000, seatflow.SeatAccessible: 800, seatflow.SeatCompanion: 800}})
	ctx := context.Background()
	e.hold("cat", "A3")
	pair := e.hold("bob", "A1", "A2")
	if _, err := e.book.PayOrder(ctx, "bob", pair.ID, "ref"); err != nil {
		t.Fatal(err)
	}
	ann := e.join("ann", 1)
	if _, err := e.book.RefundSeats(ctx, "admin", pair.ID, []int{e.seat("A2")}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.wl.OfferReturned(ctx, e.show); err != nil {
		t.Fatal(err)
	}
	if got := e.entry("ann", ann.ID); got.Status != seatflow.WaitlistWaiting {
		t.Fatalf("ann was offered %+v, a companion seat alone", got.Offer)
	}
	if s := e.states(); s["A2"] != "AVAILABLE" {
		t.Fatalf("the lone companion seat: %s, want AVAILABLE", s["A2"])
	}
}
