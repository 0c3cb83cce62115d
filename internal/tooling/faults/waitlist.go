package faults

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"time"
)

// The waiting list in the workload (the waitlist scenario, waitlist_test.go): customers
// join the showtime's waiting list once it is sold out and read their entries; an offer
// they find is recorded in the history as what it is to the seats, a hold by the
// entrant's order (the offer's token) of the offer's seats, sent when the entrant first
// joined and answered when the read that showed it was answered: the offer was made in
// between. The order then joins the orders the workload pays, cancels (declines) and
// reads like any other.

// Operations of the waiting list.
const (
	OpJoin    = "joinWaitingList"
	OpEntries = "myWaitingListEntries"
	OpLeave   = "leaveWaitingList"
)

const (
	qJoin    = `mutation FaultJoin($show: ID!, $seats: Int!) { joinWaitingList(showtimeId: $show, seats: $seats) { id status } }`
	qEntries = `query FaultEntries { myWaitingListEntries { id status showtime { id } offer { orderId expiresAt seats { id } } } }`
	qLeave   = `mutation FaultLeave($id: ID!) { leaveWaitingList(entryId: $id) { id status } }`
)

// waitlist is what the workload knows of the waiting list.
type waitlist struct {
	// joined is, per customer, when they first asked to join: no offer of theirs is older.
	joined map[int]time.Time
	// offered are the offers recorded, by order id.
	offered map[string]bool
}

// WithWaitlist adds the waiting list to the workload's mix: joins and entry reads.
func (w *Workload) WithWaitlist() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.wl = &waitlist{joined: map[int]time.Time{}, offered: map[string]bool{}}
	w.extra = []mixEntry{{OpJoin, 8, false, (*Workload).joinList}, {OpEntries, 10, false, (*Workload).readEntries}}
}

// joinList has a random customer join the waiting list for 1–2 seats.
func (w *Workload) joinList(ctx context.Context, in *Instance) {
	w.mu.Lock()
	cust := w.rnd.IntN(len(w.env.Tokens))
	seats := 1 + w.rnd.IntN(2)
	if _, ok := w.wl.joined[cust]; !ok {
		w.wl.joined[cust] = time.Now()
	}
	w.mu.Unlock()
	w.send(ctx, in, OpJoin, w.env.Tokens[cust], qJoin, map[string]any{"show": w.env.Show.GQLID, "seats": seats}, nil)
}

// readEntries has a customer who asked to join read their entries, recording the offers
// it shows for the first time.
func (w *Workload) readEntries(ctx context.Context, in *Instance) {
	w.mu.Lock()
	custs := slices.Sorted(maps.Keys(w.wl.joined))
	cust := -1
	if len(custs) > 0 {
		cust = custs[w.rnd.IntN(len(custs))]
	}
	w.mu.Unlock()
	if cust >= 0 {
		w.entries(ctx, in, cust, false)
	}
}

// entryAnswer is an entry as myWaitingListEntries answers it.
type entryAnswer struct {
	ID       string
	Status   string
	Showtime struct{ ID string }
	Offer    *struct {
		OrderID   string
		ExpiresAt time.Time
		Seats     []struct{ ID string }
	}
}

// entries reads the customer's entries, records the offers not recorded yet, and, when
// leave is set, takes the customer's WAITING entries off the list.
func (w *Workload) entries(ctx context.Context, in *Instance, cust int, leave bool) string {
	var out struct{ MyWaitingListEntries []entryAnswer }
	tok := w.env.Tokens[cust]
	a := w.post(ctx, in, OpEntries, tok, qEntries, nil, &out)
	if a.code != CodeOK {
		return a.code
	}
	for _, en := range out.MyWaitingListEntries {
		if en.Showtime.ID != w.env.Show.GQLID {
			continue
		}
		if en.Offer != nil {
			w.offer(in, a, cust, en)
		}
		if leave && en.Status == "WAITING" {
			if code := w.send(ctx, in, OpLeave, tok, qLeave, map[string]any{"id": en.ID}, nil); code != CodeOK {
				return code
			}
		}
	}
	return CodeOK
}

// offer records entry en's offer, seen by the read a, as a hold by its order.
func (w *Workload) offer(in *Instance, a answer, cust int, en entryAnswer) {
	w.mu.Lock()
	if w.wl.offered[en.Offer.OrderID] {
		w.mu.Unlock()
		return
	}
	w.wl.offered[en.Offer.OrderID] = true
	since := w.wl.joined[cust]
	w.mu.Unlock()
	seats := make([]string, len(en.Offer.Seats))
	for i, s := range en.Offer.Seats {
		seats[i] = s.ID
	}
	w.Rec.addCall(Call{Op: OpHold, Instance: in.Index, Start: since, End: a.end, Customer: cust,
		Order: dbID(en.Offer.OrderID), Seats: dbIDs(seats), Key: "waitlist-entry:" + strconv.Itoa(dbID(en.ID)),
		Code: CodeOK, Status: "PENDING_PAYMENT", ExpiresAt: en.Offer.ExpiresAt})
	o := &heldOrder{id: en.Offer.OrderID, cust: cust, seats: seats, offer: true}
	w.mu.Lock()
	w.pending = append(w.pending, o)
	w.orders = append(w.orders, o)
	w.mu.Unlock()
}

// SettleWaitlist ends the waiting list once the workload is over: every customer who
// asked to join leaves (so no offer is made after), their offers are recorded, and, once
// the seats returned meanwhile had time to go on sale (the offerers' sweep), read again.
// A customer whose reads or leaves keep failing is a violation of the scenario: their
// offers would be missing from the history.
func (w *Workload) SettleWaitlist(ctx context.Context) []string {
	w.mu.Lock()
	custs := slices.Sorted(maps.Keys(w.wl.joined))
	w.mu.Unlock()
	var failed []string
	for round, leave := range []bool{true, false} {
		if round > 0 {
			sleep(ctx, 2*time.Second)
		}
		for _, c := range custs {
			code := ""
			for try := range 5 {
				in := w.Targets[(c+try)%len(w.Targets)]
				if code = w.entries(ctx, in, c, leave); code == CodeOK {
					break
				}
				sleep(ctx, 200*time.Millisecond)
			}
			if code != CodeOK {
				failed = append(failed, "customer "+strconv.Itoa(c)+": "+code)
			}
		}
	}
	return failed
}
