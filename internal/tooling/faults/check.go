package faults

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strconv"
	"time"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/order"
	"seatflow/ent/orderseat"
	"seatflow/ent/purchasecount"
	"seatflow/internal/nodeid"
	"seatflow/internal/reconcile"
)

// checkerGrace is the orphan-hold grace period of the checker's reconciler. The product's
// (two minutes) covers holds on their way to MySQL; the checker runs when no request is in
// flight, so a hold no order took is released at once rather than two minutes later.
const checkerGrace = time.Second

// Check heals nothing: it runs after the workload and the healing. It reconciles (at
// most twice) until verify is clean, then checks every promise of the issue and returns
// the measurements with the violations found.
func Check(ctx context.Context, e *Env, w *Workload, ws []*Watcher, res *Result) {
	// Verify, and reconcile at most twice until it is clean.
	rec := &reconcile.Reconciler{DB: e.Checker.DB, Seats: e.Checker.Seats, Orders: e.Checker.Booking, Sales: e.Checker.Sales,
		Waitlist: e.Checker.Waitlist, RDB: e.Checker.Redis, Keys: e.Checker.Keys, Config: reconcile.Config{
			Now: e.Checker.Now, Grace: checkerGrace, Log: e.Checker.Log}}
	var vs []reconcile.Violation
	var err error
	for run := 0; ; run++ {
		if vs, err = reconcile.Verify(ctx, e.Checker.DB, e.Checker.Seats); err != nil {
			res.violate("verify: %v", err)
			return
		}
		if len(vs) == 0 || run == 2 {
			break
		}
		rep, err := rec.RunOnce(ctx)
		if err != nil {
			res.violate("reconcile run %d: %v", run+1, err)
			return
		}
		res.ReconcileRuns++
		res.Repairs.add(rep)
	}
	for _, v := range vs[:min(len(vs), 10)] {
		res.violate("verify after %d reconcile runs: %s", res.ReconcileRuns, v)
	}
	checkHistory(ctx, e, w, ws, res)
	checkStores(ctx, e, w, res, rec.Config.Now())
	checkPurchaseCounts(ctx, e, res)
	checkRequests(e, w, res)
	checkWatchers(e, ws, res)
}

// checkHistory checks the run's history for linearizability (linearize.go) against the
// stores as they are now, reconciled, and measures the staleness of the reads and frames.
func checkHistory(ctx context.Context, e *Env, w *Workload, ws []*Watcher, res *Result) {
	h := &History{Calls: w.Rec.Calls(), Due: map[int]time.Time{}, FinalSeats: map[int]Answer{}, FinalOrders: map[int]string{},
		Lost: w.Rec.Lost(), Waitlist: w.wl != nil}
	known := map[int]bool{}
	for _, c := range h.Calls {
		if c.Op == OpHold && c.Code == CodeOK && c.Order > 0 {
			known[c.Order] = true
			if !c.ExpiresAt.IsZero() {
				h.Due[c.Order] = e.earliestDue(c.ExpiresAt)
			}
		}
	}
	h.FinalStart = time.Now()
	states, _, err := e.Checker.Seats.States(ctx, e.Show.ID)
	if err != nil {
		res.violate("final read of the seats: %v", err)
		return
	}
	orders, err := e.Checker.DB.Order.Query().Where(order.ShowtimeID(e.Show.ID)).All(ctx)
	if err != nil {
		res.violate("final read of the orders: %v", err)
		return
	}
	h.FinalEnd = time.Now()
	byToken := map[string]int{}
	for _, o := range orders {
		byToken[o.HoldToken] = o.ID
		if known[o.ID] {
			h.FinalOrders[o.ID] = string(o.Status)
		}
	}
	for seat, st := range states {
		ans := Answer{}
		switch {
		case st.Status == seatflow.SeatBlocked:
			ans.Owner = house
		case st.Returned:
			ans.Owner = listed
		case st.Status == seatflow.SeatHeld, st.Status == seatflow.SeatSold:
			ans.Owner, ans.Sold = byToken[st.Token], st.Status == seatflow.SeatSold
			if !known[ans.Owner] {
				ans.Owner = ghost // an order no client was given, or none (an orphan hold)
			}
		}
		h.FinalSeats[seat] = ans
	}
	dir := os.Getenv("SEATFLOW_FAULTS_RESULTS")
	if dir == "" {
		dir = e.logDir
	}
	lin := h.Check(dir, fmt.Sprintf("%02d-%s", res.Order, res.Name))
	lin.Reads = h.readStaleness(w.Rec.SeatReads())
	seen := make([]map[int][]seen, 0, len(ws))
	for _, wt := range ws {
		seen = append(seen, wt.Seen())
	}
	lin.Frames = h.frameLag(seen)
	res.Linearizability = &lin
	for _, f := range lin.Failures() {
		res.violate("%s", f)
	}
}

// checkStores checks the seats and orders: no seat sold twice, every PAID order's seats
// sold to it, no held seat without a live pending order, purchase limits respected, and
// every order the clients saw paid still PAID.
func checkStores(ctx context.Context, e *Env, w *Workload, res *Result, now time.Time) {
	db := e.Checker.DB
	orders, err := db.Order.Query().Where(order.ShowtimeID(e.Show.ID)).All(ctx)
	if err != nil {
		res.violate("read orders: %v", err)
		return
	}
	seatsOf := map[int][]int{}
	rows, err := db.OrderSeat.Query().All(ctx)
	if err != nil {
		res.violate("read order seats: %v", err)
		return
	}
	for _, r := range rows {
		if r.RefundedAt == nil { // a seat refunded is no longer its order's
			seatsOf[r.OrderID] = append(seatsOf[r.OrderID], r.SeatID)
		}
	}
	states, _, err := e.Checker.Seats.States(ctx, e.Show.ID)
	if err != nil {
		res.violate("read seat states: %v", err)
		return
	}
	byToken := map[string]int{}
	owner := map[int]int{} // seat → active order
	perUser := map[string]int{}
	for _, o := range orders {
		byToken[o.HoldToken] = o.ID
		switch o.Status {
		case seatflow.OrderPaid, seatflow.OrderPending:
		default:
			continue
		}
		res.countOrder(o.Status)
		perUser[o.UserID] += len(seatsOf[o.ID])
		for _, s := range seatsOf[o.ID] {
			if prev, ok := owner[s]; ok {
				res.violate("seat %d sold twice: in active orders %d and %d", s, prev, o.ID)
			}
			owner[s] = o.ID
			if o.Status == seatflow.OrderPaid && (states[s].Status != seatflow.SeatSold || states[s].Token != o.HoldToken) {
				res.violate("seat %d of PAID order %d is %s in Redis", s, o.ID, states[s].Status)
			}
		}
	}
	status := map[int]*struct {
		st  seatflow.OrderStatus
		exp time.Time
	}{}
	for _, o := range orders {
		exp := o.ExpiresAt
		status[o.ID] = &struct {
			st  seatflow.OrderStatus
			exp time.Time
		}{o.Status, exp}
	}
	for seat, st := range states {
		if st.Status != seatflow.SeatHeld || st.Returned { // returned to the waiting list: Verify judges its age
			continue
		}
		o, ok := status[byToken[st.Token]]
		if !ok || o.st != seatflow.OrderPending || !o.exp.Add(reconcile.DefaultExpiryBuffer).After(now) {
			res.violate("seat %d HELD (token %q) without a live PENDING order after the grace period", seat, st.Token)
		}
	}
	for user, n := range perUser {
		if n > e.Show.Limit {
			res.violate("user %s has %d seats in active orders, over the purchase limit %d", user, n, e.Show.Limit)
		}
	}
	for id := range w.Paid {
		_, parts, err := nodeid.Decode(id)
		if err != nil || len(parts) != 1 {
			res.violate("paid order id %q does not decode", id)
			continue
		}
		if o, ok := status[parts[0]]; !ok || o.st != seatflow.OrderPaid {
			res.violate("order %d was answered PAID but is no longer PAID", parts[0])
		}
	}
}

// checkPurchaseCounts: every customer's purchase count in MySQL equals the seats of their
// active orders not refunded, and the reconciler had none to recount. A hold adds its seats
// to the count in the transaction that inserts the order and its occupancy, and a cancel,
// expiry or refund takes them off in the one that deletes the occupancy
// (internal/booking/limit.go): there is no moment between the count and the order for a
// crash to fall in, so no scenario can inject one. The faults the scenarios do make
// (connections reset and MySQL restarted mid-transaction, MySQL unreachable or silent,
// Redis lost mid-hold, a Redis master killed) must leave the counts exact without repair:
// a count the checker's reconciler recounted (verify reports a count off its occupancy)
// is a violation here, even though verify is clean after it.
func checkPurchaseCounts(ctx context.Context, e *Env, res *Result) {
	if res.Repairs.PurchaseCountsRecounted > 0 {
		res.violate("the reconciler recounted %d purchase counts: a count was off the occupancy after the run", res.Repairs.PurchaseCountsRecounted)
	}
	db := e.Checker.DB
	orders, err := db.Order.Query().Where(order.ShowtimeID(e.Show.ID), order.StatusIn(seatflow.OrderPending, seatflow.OrderPaid)).
		WithSeats(func(q *ent.OrderSeatQuery) { q.Where(orderseat.RefundedAtIsNil()) }).All(ctx)
	if err != nil {
		res.violate("read orders: %v", err)
		return
	}
	rows, err := db.PurchaseCount.Query().Where(purchasecount.ShowtimeID(e.Show.ID)).All(ctx)
	if err != nil {
		res.violate("read purchase counts: %v", err)
		return
	}
	active := map[string]int{}
	for _, o := range orders {
		active[o.UserID] += len(o.Edges.Seats)
	}
	counted := map[string]int{}
	for _, r := range rows {
		counted[r.UserID] = r.Seats
	}
	for _, user := range slices.Sorted(maps.Keys(counted)) {
		if n := counted[user]; n != active[user] {
			res.violate("user %s's purchase count in MySQL is %d, their active orders have %d seats", user, n, active[user])
		}
	}
	for _, user := range slices.Sorted(maps.Keys(active)) {
		if _, ok := counted[user]; !ok && active[user] > 0 {
			res.violate("user %s has no purchase count in MySQL, their active orders have %d seats", user, active[user])
		}
	}
}

// checkRequests: no INTERNAL, every error coded, no request past its deadline + 1 s.
func checkRequests(e *Env, w *Workload, res *Result) {
	samples, _, _ := w.Rec.Samples()
	limit := e.Plan.Deadline + time.Second
	slow := 0
	for _, s := range samples {
		switch s.Code {
		case seatflow.EINTERNAL, CodeNoCode, CodeBadAnswer, CodeTimeout, CodeTransport:
			res.violate("%s on instance %d answered %s after %s", s.Op, s.Instance, s.Code, s.Latency.Round(time.Millisecond))
		}
		if s.Latency > limit && s.Code != CodeTimeout {
			slow++
		}
	}
	if slow > 0 {
		res.violate("%d requests slower than their deadline + 1 s (%s)", slow, limit)
	}
}

// checkWatchers: every watcher, once live again, holds the real map.
func checkWatchers(e *Env, ws []*Watcher, res *Result) {
	ctx := context.Background()
	want := func() (map[string]string, int, error) {
		states, v, err := e.Checker.Seats.States(ctx, e.Show.ID)
		if err != nil {
			return nil, 0, err
		}
		m := map[string]string{}
		for id, st := range states {
			m[nodeid.Encode(nodeid.Seat, id)] = string(st.Status)
		}
		return m, v, nil
	}
	deadline := time.Now().Add(15 * time.Second)
	for i, w := range ws {
		var diff string
		for {
			real, v, err := want()
			if err != nil {
				res.violate("read the real map: %v", err)
				return
			}
			got, gv := w.Map()
			diff = mapDiff(got, real)
			if w.Live() && diff == "" {
				break
			}
			if time.Now().After(deadline) {
				diff = fmt.Sprintf("live=%v version %d (real %d): %s", w.Live(), gv, v, diff)
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if diff != "" {
			res.violate("watcher %d's final map is not the real map: %s", i, diff)
		}
	}
}

func mapDiff(got, want map[string]string) string {
	var out []string
	for id, st := range want {
		if got[id] != st {
			out = append(out, fmt.Sprintf("%s %s≠%s", id, got[id], st))
		}
	}
	for id := range got {
		if _, ok := want[id]; !ok {
			out = append(out, id+" extra")
		}
	}
	sort.Strings(out)
	if len(out) > 5 {
		out = append(out[:5], "… "+strconv.Itoa(len(out)-5)+" more")
	}
	if len(out) == 0 {
		return ""
	}
	return fmt.Sprint(out)
}
