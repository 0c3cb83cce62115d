package loadtest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"seatflow"
	"seatflow/ent/order"
	"seatflow/ent/orderseat"
	"seatflow/internal/reconcile"
)

// converge runs runReconcile as admin until a run repairs nothing (bounded).
func (l *loadRun) converge(ctx context.Context, rep *Report) {
	type report struct {
		ExpiredCancelled, PaidSeatsFixed, HashesRebuilt, OrphanHoldsReleased, SoldOrphansReleased, LimitsRecounted,
		PendingSeatsReheld int
	}
	q := `mutation { runReconcile { expiredCancelled paidSeatsFixed hashesRebuilt orphanHoldsReleased soldOrphansReleased limitsRecounted pendingSeatsReheld } }`
	quiet := 0
	for i := 0; i < 30 && ctx.Err() == nil; i++ {
		var out struct{ RunReconcile report }
		err := l.call(ctx, l.o.Instances[i%len(l.o.Instances)], l.admin, q, nil, &out)
		if err != nil {
			rep.reconciles = append(rep.reconciles, "error: "+err.Error())
			time.Sleep(time.Second)
			continue
		}
		r := out.RunReconcile
		rep.reconciles = append(rep.reconciles, fmt.Sprintf("%+v", r))
		if r == (report{}) {
			quiet++
			if quiet >= 2 {
				rep.converged = true
				return
			}
		} else {
			quiet = 0
		}
		time.Sleep(time.Second)
	}
}

// verify runs reconcile.Verify over the instances' stores (retrying a few times with a
// reconcile in between, since holds keep expiring in the background), checks that no
// seat is in two active orders and that every order the load test paid is still PAID.
func (l *loadRun) verify(ctx context.Context, rep *Report) {
	for attempt := 1; attempt <= 4; attempt++ {
		rep.verifyAttempts = attempt
		vs, err := reconcile.Verify(ctx, l.app.DB, l.app.Seats)
		rep.verifyErr = err
		rep.verifyFinal = rep.verifyFinal[:0]
		for _, v := range vs {
			rep.verifyFinal = append(rep.verifyFinal, v.String())
		}
		if attempt == 1 {
			rep.verifyFirst = append([]string(nil), rep.verifyFinal...)
		}
		if err == nil && len(vs) == 0 {
			break
		}
		time.Sleep(2 * time.Second)
		l.converge(ctx, &Report{})
	}
	// Seats in two active orders, straight from MySQL.
	active, err := l.app.DB.Order.Query().Where(order.StatusIn(seatflow.OrderPending, seatflow.OrderPaid)).All(ctx)
	if err != nil {
		rep.verifyErr = errors.Join(rep.verifyErr, err)
		return
	}
	showOf := map[int]int{}
	ids := make([]int, 0, len(active))
	for _, o := range active {
		showOf[o.ID] = o.ShowtimeID
		ids = append(ids, o.ID)
	}
	seatsOf, err := l.app.DB.OrderSeat.Query().Where(orderseat.OrderIDIn(ids...)).All(ctx)
	if err != nil {
		rep.verifyErr = errors.Join(rep.verifyErr, err)
		return
	}
	count := map[[2]int]int{}
	for _, s := range seatsOf {
		k := [2]int{showOf[s.OrderID], s.SeatID}
		count[k]++
		if count[k] == 2 {
			rep.oversoldDB++
		}
	}
	// Every order the load test saw PAID must still be PAID.
	paidIDs := make([]int, 0, len(l.paid))
	for id := range l.paid {
		if n, err := strconv.Atoi(id); err == nil {
			paidIDs = append(paidIDs, n)
		}
	}
	stillPaid := map[int]bool{}
	for i := 0; i < len(paidIDs); i += 500 {
		chunk := paidIDs[i:min(i+500, len(paidIDs))]
		os, err := l.app.DB.Order.Query().Where(order.IDIn(chunk...), order.StatusEQ(seatflow.OrderPaid)).All(ctx)
		if err != nil {
			rep.verifyErr = errors.Join(rep.verifyErr, err)
			return
		}
		for _, o := range os {
			stillPaid[o.ID] = true
		}
	}
	for _, id := range paidIDs {
		if !stillPaid[id] {
			rep.paidLost = append(rep.paidLost, strconv.Itoa(id))
		}
	}
}
