package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/order"
	"seatflow/ent/orderseat"
	"seatflow/ent/waitlistentry"
	"seatflow/internal/booking"
	"seatflow/internal/waitlist"
)

// The waiting list (docs/DESIGN.md "Waiting list"): sold-out showtimes with wlEntries
// entries waiting each, then wlReleased seats released at once, offered by one instance's
// offerer, then by two instances' racing.
const (
	wlRows, wlPerRow = 10, 30 // 300 seats, held 4 a customer
	wlEntries        = 5000
	wlReleased       = 200 // the seats of wlReleased/4 orders, cancelled at once
	wlJoinWorkers    = 8
	// wlWait bounds the wait for every released seat to be offered.
	wlWait = 30 * time.Second
	// wlTarget: each released seat offered within it (p99).
	wlTarget = time.Second
)

// wlResult is what the section reports.
type wlResult struct {
	entries, seats int
	joinTook       time.Duration
	sizes          [5]int   // entries by size
	runs           []*wlRun // one offerer, then two
	anchorOffers   int      // the seat groups the anchor held: the first run's offers
	anchorTook     time.Duration
	anchorScripts  map[string]scriptUse
}

// wlRun is one burst of releases and the offers it got.
type wlRun struct {
	instances            int
	cancels              int
	cancelTook           time.Duration
	offers               []wlOrder // in the order they were made
	offeredSeats         int
	firstRelease, lastAt time.Time // the first release, the last offer's order
	delays               latencies
	scripts              map[string]scriptUse // from the burst until every seat was offered
	lostRaces            int                  // offers given back after another instance's won
	waitingLeft          int
	checks               []wlCheck
}

// wlCheck is one check of the offers and its outcome (nil: passed).
type wlCheck struct {
	name string
	err  error
}

// failed is the first check of the run that failed, nil when all held.
func (r *wlRun) failed() error {
	for _, c := range r.checks {
		if c.err != nil {
			return fmt.Errorf("waiting-list check failed with %d offerers: %s: %w", r.instances, c.name, c.err)
		}
	}
	return nil
}

// wlShow is a sold-out showtime of the section and the orders its burst cancels.
type wlShow struct {
	id       int
	released []*seatflow.Order
}

func benchWaitlist(ctx context.Context, b *benchEnv, w io.Writer) error {
	if load := loadAverage(); busyHost(load) {
		b.note("Waiting list: the host was shared, load average %s at the section's start on %d cores: the instances, MySQL and Redis ran beside other work, which the scripts' times as the instances see them (their wait included) feel first.",
			load, runtime.NumCPU())
	}
	flags := []string{"-holds-per-minute", "0", "-order-changes-per-minute", "0"}
	one, err := b.openBenchApp(ctx, flags...)
	if err != nil {
		return err
	}
	defer one.Close()
	// Three showtimes of one hall: the first's burst is offered by one instance, the
	// second's by two; the third is the anchor's.
	shows, err := one.createShows(ctx, 3, wlRows, wlPerRow, true, 10, true)
	if err != nil {
		return err
	}
	seatIDs := make([]int, len(shows[0].SeatIDs))
	for i, id := range shows[0].SeatIDs {
		seatIDs[i] = databaseID(id)
	}
	r := &wlResult{entries: wlEntries, seats: len(seatIDs)}
	rng := rand.New(rand.NewPCG(7, 11))
	sizes := make([]int, wlEntries) // 1 to 4 seats, a fixed draw
	for i := range sizes {
		sizes[i] = 1 + rng.IntN(4)
		r.sizes[sizes[i]]++
	}
	var sold []wlShow
	for k, s := range shows[:2] {
		show, err := wlSoldOut(ctx, one, databaseID(s.ID), seatIDs, k)
		if err != nil {
			return err
		}
		sold = append(sold, show)
	}
	progress("bench:   waitlist: %d seats sold out twice; %d entries join each …", len(seatIDs), wlEntries)
	t0 := time.Now()
	for k, s := range sold {
		if err := forEach(ctx, wlJoinWorkers, wlEntries, func(ctx context.Context, i int) error {
			_, err := one.Waitlist.Join(ctx, fmt.Sprintf("wl-entrant-%d-%d", k, i), waitlist.JoinInput{ShowtimeID: s.id, Seats: sizes[i]})
			return err
		}); err != nil {
			return fmt.Errorf("join: %w", err)
		}
	}
	r.joinTook = time.Since(t0) / time.Duration(len(sold))

	run, err := wlBurst(ctx, b, []*benchServer{one}, sold[0])
	if err != nil {
		return err
	}
	r.runs = append(r.runs, run)
	two, err := b.openBenchApp(ctx, flags...)
	if err != nil {
		return err
	}
	defer two.Close()
	if run, err = wlBurst(ctx, b, []*benchServer{one, two}, sold[1]); err != nil {
		return err
	}
	r.runs = append(r.runs, run)

	// The anchor: the first run's seat groups held on the third showtime (the same hall, so
	// the same seat ids) by bare holds (booking's HoldSeats: the hold script, then the
	// order's transaction), one after another as one offerer makes its offers.
	before := scriptUses()
	t0 = time.Now()
	for i, o := range r.runs[0].offers {
		if _, err := one.Booking.HoldSeats(ctx, "wl-anchor-"+strconv.Itoa(i), booking.HoldSeatsInput{ShowtimeID: databaseID(shows[2].ID),
			SeatIDs: o.seats, IdempotencyKey: "wl-anchor-" + strconv.Itoa(i)}); err != nil {
			return fmt.Errorf("anchor hold: %w", err)
		}
	}
	r.anchorTook, r.anchorOffers = time.Since(t0), len(r.runs[0].offers)
	r.anchorScripts = scriptUses().since(before)

	writeWaitlist(w, r)
	for _, run := range r.runs {
		if err := run.failed(); err != nil {
			return err
		}
	}
	return nil
}

// wlSoldOut holds every seat of show, 4 by each customer, and returns it with the first
// wlReleased/4 orders: those its burst cancels.
func wlSoldOut(ctx context.Context, s *benchServer, show int, seatIDs []int, k int) (wlShow, error) {
	var orders []*seatflow.Order
	for i := 0; i < len(seatIDs); i += 4 {
		user := fmt.Sprintf("wl-holder-%d-%d", k, i/4)
		o, err := s.Booking.HoldSeats(ctx, user, booking.HoldSeatsInput{ShowtimeID: show, SeatIDs: seatIDs[i:min(i+4, len(seatIDs))],
			IdempotencyKey: user})
		if err != nil {
			return wlShow{}, fmt.Errorf("sell out: %w", err)
		}
		orders = append(orders, o)
	}
	return wlShow{id: show, released: orders[:wlReleased/4]}, nil
}

// wlBurst cancels the show's released orders at once, spread over insts (each running its
// offerer), waits until their seats are offered, and reads back and checks the offers.
func wlBurst(ctx context.Context, b *benchEnv, insts []*benchServer, show wlShow) (*wlRun, error) {
	r := &wlRun{instances: len(insts)}
	var released []int
	for _, o := range show.released {
		released = append(released, o.SeatIDs...)
	}
	// Every seat change of the showtime, as published (lua/delta.lua): a seat's first change
	// from here on is its release, stamped with Redis' clock by the script that made it.
	ps := b.RDB.Subscribe(ctx, insts[0].Keys.Events(show.id))
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		return nil, err
	}
	var evMu sync.Mutex
	releasedAt := map[int]time.Time{}
	go func() {
		for m := range ps.Channel() {
			var d struct {
				At      int64 `json:"at"`
				Changes []struct {
					SeatID any `json:"seatId"`
				} `json:"changes"`
			}
			if json.Unmarshal([]byte(m.Payload), &d) != nil {
				continue
			}
			evMu.Lock()
			for _, c := range d.Changes {
				id, _ := strconv.Atoi(fmt.Sprint(c.SeatID))
				if _, seen := releasedAt[id]; !seen {
					releasedAt[id] = time.UnixMilli(d.At)
				}
			}
			evMu.Unlock()
		}
	}()

	// The burst: every order cancelled at once, taking turns over the instances.
	progress("bench:   waitlist: %d offerer(s): cancelling %d orders (%d seats) at once …", len(insts), len(show.released), len(released))
	before := scriptUses()
	var start, wg sync.WaitGroup
	start.Add(1)
	var cancelErr atomic.Value
	var cancelled atomic.Int64
	for i, o := range show.released {
		inst := insts[i%len(insts)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			start.Wait()
			if _, err := inst.Booking.CancelOrder(ctx, o.UserID, o.ID); err != nil {
				cancelErr.CompareAndSwap(nil, err)
				return
			}
			cancelled.Add(1)
		}()
	}
	t0 := time.Now()
	start.Done()
	wg.Wait()
	r.cancelTook, r.cancels = time.Since(t0), int(cancelled.Load())
	if err, _ := cancelErr.Load().(error); err != nil {
		return nil, fmt.Errorf("cancel: %w", err)
	}

	// Wait for every released seat to be in an offer (or the bound).
	db := insts[0].DB
	for deadline := time.Now().Add(wlWait); ; time.Sleep(20 * time.Millisecond) {
		got, err := db.WaitlistEntry.Query().Where(waitlistentry.ShowtimeID(show.id), waitlistentry.StateEQ(waitlistentry.StateOFFERED)).
			Select(waitlistentry.FieldSeats).Ints(ctx)
		if err != nil {
			return nil, err
		}
		n := 0
		for _, k := range got {
			n += k
		}
		if r.offeredSeats = n; n >= len(released) || time.Now().After(deadline) {
			break
		}
	}
	time.Sleep(200 * time.Millisecond) // a give-back of a lost race, still in flight, lands in the figures
	r.scripts = scriptUses().since(before)
	r.lostRaces = r.scripts["release"].calls - r.cancels
	progress("bench:   waitlist: %d of %d seats offered; reading back …", r.offeredSeats, len(released))

	// Read back: the entries, the showtime's pending and paid orders, the offers among them.
	rows, err := db.WaitlistEntry.Query().Where(waitlistentry.ShowtimeID(show.id)).All(ctx)
	if err != nil {
		return nil, err
	}
	entries := make([]wlEntry, len(rows))
	offerOf := map[int]bool{}
	for i, e := range rows {
		entries[i] = wlEntry{id: e.ID, seats: e.Seats}
		if e.OrderID != nil {
			entries[i].orderID = *e.OrderID
			offerOf[*e.OrderID] = true
		} else if e.State == waitlistentry.StateWAITING {
			r.waitingLeft++
		}
	}
	orders, err := showOrders(ctx, insts[0], show.id)
	if err != nil {
		return nil, err
	}
	for _, o := range orders {
		if offerOf[o.id] {
			r.offers = append(r.offers, o)
			r.lastAt = later(r.lastAt, o.created)
		}
	}
	evMu.Lock()
	delays, delayErr := offerDelays(releasedAt, r.offers)
	for _, s := range released {
		if at, ok := releasedAt[s]; ok && (r.firstRelease.IsZero() || at.Before(r.firstRelease)) {
			r.firstRelease = at
		}
	}
	evMu.Unlock()
	r.delays = delays
	r.checks = []wlCheck{
		{"every released seat offered, in one offer each", checkEveryReleasedOffered(released, r.offers)},
		{"no seat in two pending or paid orders", checkOfferedOnce(orders)},
		{"offers in join order", checkJoinOrder(entries)},
		{"a release heard for every offered seat", delayErr},
	}
	return r, nil
}

// forEach runs fn for 0..n-1 in workers goroutines and returns the first error.
func forEach(ctx context.Context, workers, n int, fn func(ctx context.Context, i int) error) error {
	var next atomic.Int64
	var first atomic.Value
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < n && first.Load() == nil; i = int(next.Add(1)) - 1 {
				if err := fn(ctx, i); err != nil {
					first.CompareAndSwap(nil, err)
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := first.Load().(error); err != nil {
		return err
	}
	return ctx.Err()
}

// showOrders are the showtime's pending and paid orders with their seats, in id order.
func showOrders(ctx context.Context, s *benchServer, show int) ([]wlOrder, error) {
	os, err := s.DB.Order.Query().Where(order.ShowtimeID(show), order.StatusIn(seatflow.OrderPending, seatflow.OrderPaid)).
		WithSeats(func(q *ent.OrderSeatQuery) { q.Order(ent.Asc(orderseat.FieldSeatID)) }).Order(ent.Asc(order.FieldID)).All(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]wlOrder, len(os))
	for i, o := range os {
		out[i] = wlOrder{id: o.ID, created: o.CreatedAt}
		for _, l := range o.Edges.Seats {
			out[i].seats = append(out[i].seats, l.SeatID)
		}
	}
	return out, nil
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// scriptUse is the calls of one seat script and the time they took, as the instances saw
// it (seats' script_duration histogram: the round trip and the batch's wait included).
type scriptUse struct {
	calls int
	took  time.Duration
}

type scriptUseMap map[string]scriptUse

// scriptUses reads the seat scripts' histogram of this process (both instances' calls).
func scriptUses() scriptUseMap {
	out := scriptUseMap{}
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		return out
	}
	for _, mf := range mfs {
		if mf.GetName() != "seatflow_redis_script_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "script" {
					h := m.GetHistogram()
					out[l.GetValue()] = scriptUse{calls: int(h.GetSampleCount()), took: time.Duration(h.GetSampleSum() * float64(time.Second))}
				}
			}
		}
	}
	return out
}

// since is the use between before and u.
func (u scriptUseMap) since(before scriptUseMap) map[string]scriptUse {
	out := map[string]scriptUse{}
	for k, v := range u {
		out[k] = scriptUse{calls: v.calls - before[k].calls, took: v.took - before[k].took}
	}
	return out
}
