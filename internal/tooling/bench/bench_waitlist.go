package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
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

// The waiting list (docs/DESIGN.md "Waiting list"): a sold-out showtime with wlEntries
// entries waiting, then wlReleased seats released at once, offered by the offerers of two
// instances.
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

// wlScripts are the seat scripts whose time the section reports (seats' script_duration
// histogram, by label): what a release and its offers cost Redis.
var wlScripts = []string{"release", "snapshot", "offer", "resell", "hold"}

// wlResult is what the section reports.
type wlResult struct {
	entries, seats       int
	joinTook             time.Duration
	sizes                [5]int // entries by size
	cancels              int
	cancelTook           time.Duration
	offers               []wlOrder // in the order they were made
	offeredSeats         int
	firstRelease, lastAt time.Time // the first release, the last offer's order
	delays               latencies
	scripts              map[string]scriptUse // during the burst
	lostRaces            int                  // offers given back after another instance's won
	waitingLeft          int
	anchorTook           time.Duration
	anchorScripts        map[string]scriptUse
	checks               []wlCheck
}

// wlCheck is one check of the offers and its outcome (nil: passed).
type wlCheck struct {
	name string
	err  error
}

func benchWaitlist(ctx context.Context, b *benchEnv, w io.Writer) error {
	// Two instances, each with its offerer running (waitlist.Service.Run): the releases are
	// shared between them, so both are told of returned seats and race to offer them.
	one, err := b.openBenchApp(ctx, "-holds-per-minute", "0", "-order-changes-per-minute", "0")
	if err != nil {
		return err
	}
	defer one.Close()
	two, err := b.openBenchApp(ctx, "-holds-per-minute", "0", "-order-changes-per-minute", "0")
	if err != nil {
		return err
	}
	defer two.Close()
	shows, err := one.createShows(ctx, 2, wlRows, wlPerRow, true, 10, true) // the measured showtime, the anchor's twin
	if err != nil {
		return err
	}
	show, twin := databaseID(shows[0].ID), databaseID(shows[1].ID)
	seatIDs := make([]int, len(shows[0].SeatIDs))
	for i, id := range shows[0].SeatIDs {
		seatIDs[i] = databaseID(id)
	}

	// Sold out: every seat held, 4 by each customer; the first wlReleased/4 orders are the
	// ones cancelled.
	progress("bench:   waitlist: selling out %d seats, then %d entries join …", len(seatIDs), wlEntries)
	var holders []*seatflow.Order
	for i := 0; i < len(seatIDs); i += 4 {
		user := "wl-holder-" + strconv.Itoa(i/4)
		o, err := one.Booking.HoldSeats(ctx, user, booking.HoldSeatsInput{ShowtimeID: show, SeatIDs: seatIDs[i:min(i+4, len(seatIDs))],
			IdempotencyKey: "wl-" + strconv.Itoa(i)})
		if err != nil {
			return fmt.Errorf("sell out: %w", err)
		}
		holders = append(holders, o)
	}
	released := slices.Concat(seatIDsOf(holders[:wlReleased/4])...)

	// The entries: sizes 1 to 4 (a fixed draw), each a customer of its own.
	r := &wlResult{entries: wlEntries, seats: len(seatIDs), scripts: map[string]scriptUse{}}
	rng := rand.New(rand.NewPCG(7, 11))
	sizes := make([]int, wlEntries)
	for i := range sizes {
		sizes[i] = 1 + rng.IntN(4)
		r.sizes[sizes[i]]++
	}
	t0 := time.Now()
	if err := forEach(ctx, wlJoinWorkers, wlEntries, func(ctx context.Context, i int) error {
		_, err := one.Waitlist.Join(ctx, "wl-entrant-"+strconv.Itoa(i), waitlist.JoinInput{ShowtimeID: show, Seats: sizes[i]})
		return err
	}); err != nil {
		return fmt.Errorf("join: %w", err)
	}
	r.joinTook = time.Since(t0)

	// Every seat change of the showtime, as published (lua/delta.lua): a seat's first change
	// from here on is its release, stamped with Redis' clock by the script that made it.
	ps := b.RDB.Subscribe(ctx, one.Keys.Events(show))
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		return err
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

	// The burst: the orders of wlReleased seats cancelled at once, half at each instance.
	progress("bench:   waitlist: %d entries joined in %s; cancelling %d orders (%d seats) at once …", wlEntries,
		r.joinTook.Round(time.Millisecond), wlReleased/4, wlReleased)
	before := scriptUses()
	var start sync.WaitGroup
	start.Add(1)
	var wg sync.WaitGroup
	var cancelErr atomic.Value
	var cancelled atomic.Int64
	for i, o := range holders[:wlReleased/4] {
		inst := one
		if i%2 == 1 {
			inst = two
		}
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
	t0 = time.Now()
	start.Done()
	wg.Wait()
	r.cancelTook, r.cancels = time.Since(t0), int(cancelled.Load())
	if err, _ := cancelErr.Load().(error); err != nil {
		return fmt.Errorf("cancel: %w", err)
	}

	// Wait for every released seat to be in an offer (or the bound).
	for deadline := time.Now().Add(wlWait); ; time.Sleep(20 * time.Millisecond) {
		got, err := one.DB.WaitlistEntry.Query().Where(waitlistentry.ShowtimeID(show), waitlistentry.StateEQ(waitlistentry.StateOFFERED)).
			Select(waitlistentry.FieldSeats).Ints(ctx)
		if err != nil {
			return err
		}
		n := 0
		for _, k := range got {
			n += k
		}
		if r.offeredSeats = n; n >= wlReleased || time.Now().After(deadline) {
			break
		}
	}
	time.Sleep(200 * time.Millisecond) // a give-back of a lost race, still in flight, lands in the figures
	r.scripts = scriptUses().since(before)
	r.lostRaces = r.scripts["release"].calls - r.cancels
	progress("bench:   waitlist: %d of %d seats offered; reading back …", r.offeredSeats, wlReleased)

	// Read back: the entries, the showtime's pending and paid orders, the offers among them.
	rows, err := one.DB.WaitlistEntry.Query().Where(waitlistentry.ShowtimeID(show)).All(ctx)
	if err != nil {
		return err
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
	orders, err := showOrders(ctx, one, show)
	if err != nil {
		return err
	}
	for _, o := range orders {
		if offerOf[o.id] {
			r.offers = append(r.offers, o)
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
	for _, o := range r.offers {
		r.lastAt = later(r.lastAt, o.created)
	}
	r.checks = []wlCheck{
		{"every released seat offered, in one offer each", checkEveryReleasedOffered(released, r.offers)},
		{"no seat in two pending or paid orders", checkOfferedOnce(orders)},
		{"offers in join order", checkJoinOrder(entries)},
		{"a release heard for every offered seat", delayErr},
	}

	// The anchor: the same seat groups held on the twin showtime (the same hall, so the same
	// seat ids) by bare holds (booking's
	// HoldSeats: the hold script, then the order's transaction), one after another as one
	// offerer makes its offers.
	before = scriptUses()
	t0 = time.Now()
	for i, o := range r.offers {
		if _, err := one.Booking.HoldSeats(ctx, "wl-anchor-"+strconv.Itoa(i), booking.HoldSeatsInput{ShowtimeID: twin,
			SeatIDs: o.seats, IdempotencyKey: "wl-anchor-" + strconv.Itoa(i)}); err != nil {
			return fmt.Errorf("anchor hold: %w", err)
		}
	}
	r.anchorTook = time.Since(t0)
	r.anchorScripts = scriptUses().since(before)

	writeWaitlist(w, r)
	for _, c := range r.checks {
		if c.err != nil {
			return fmt.Errorf("waiting-list check failed: %s: %w", c.name, c.err)
		}
	}
	return nil
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

func seatIDsOf(orders []*seatflow.Order) [][]int {
	out := make([][]int, len(orders))
	for i, o := range orders {
		out[i] = o.SeatIDs
	}
	return out
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
