package faults

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/anishathalye/porcupine"

	"seatflow"
)

// The sequential specifications the histories are checked against (docs/RELIABILITY.md,
// "Consistency"): each seat is a register (free, held by an order, sold to an order) and
// each order a state machine of its own. A history is split into one partition per seat and
// one per order; a hold of several seats appears in the partition of each of its seats.
// Both models are nondeterministic: an operation whose answer was lost may have taken
// effect or not, and the power-set construction of porcupine keeps every possibility.

// Kinds of operation the models know.
const (
	actHold   = "hold"
	actPay    = "pay"
	actCancel = "cancel"
	actExtend = "extend"
	actRefund = "refund" // admin refundOrder: the staff release of a paid order's seats
	// actRefundSeats is admin refundSeats: some seats of a paid order refunded (every seat
	// left: the whole order); in the partitions of the seats it named and of the order.
	actRefundSeats = "refundSeats"
	// actBlock and actUnblock are admin blockSeats and unblockSeats of one seat: a house
	// seat, off sale (BLOCKED) until unblocked; in the seat's partition only.
	actBlock   = "block"
	actUnblock = "unblock"
	actRead    = "read"   // order(id): the order's status as MySQL holds it
	actLapse   = "lapse"  // the order's hold runs out (not a client operation)
	actExpire  = "expire" // the expiry worker or the reconciler ends the order (not a client operation)
	actFinal   = "final"  // the stores read directly once the run is over and reconciled
)

// outcome is what an answer tells the model.
type outcome uint8

const (
	outOK       outcome = iota
	outUnknown          // lost, or a retry may help: it may have taken effect or not (and may still)
	outRefused          // a definite answer that changed nothing and says nothing of the state
	outTaken            // SEATS_UNAVAILABLE naming this seat: it was not free
	outFree             // SEATS_UNAVAILABLE naming only other seats: this one was free
	outExpired          // ORDER_EXPIRED
	outInvalid          // INVALID_STATE
	outNotFound         // NOT_FOUND
)

var outcomeNames = [...]string{"OK", "unknown", "refused", "taken", "free", seatflow.EORDEREXPIRED, seatflow.EINVALIDSTATE, seatflow.ENOTFOUND}

func (o outcome) String() string { return outcomeNames[o] }

// outcomeOf reads an answer's code (the recorder's own codes included) for an operation.
func outcomeOf(code string) outcome {
	switch code {
	case CodeOK:
		return outOK
	case seatflow.EORDEREXPIRED:
		return outExpired
	case seatflow.EINVALIDSTATE:
		return outInvalid
	case seatflow.ENOTFOUND:
		return outNotFound
	case seatflow.EINVALID, seatflow.ERATELIMITED, seatflow.ESEATGAP, seatflow.ENOTONSALE, seatflow.EFORBIDDEN, seatflow.EUNAUTHENTICATED:
		return outRefused
	}
	// SERVICE_UNAVAILABLE, TIMEOUT, TRANSPORT, IN_PROGRESS, INTERNAL, an uncoded or non-JSON
	// answer — and, for a hold, PURCHASE_LIMIT_EXCEEDED and a SEATS_UNAVAILABLE naming no
	// seat, which can be answered after the seats were taken in Redis (and released, unless
	// the release failed: then an orphan hold waits for the reconciler).
	return outUnknown
}

// Action is one operation as a partition sees it.
type Action struct {
	Kind  string
	Order int // the order; 0 for a hold whose answer was lost (its order is unknown)
	// Index is the operation's place in the recorded history (-1 for the checker's own).
	Index int
	// Returns says the showtime keeps a waiting list: a seat an operation frees may be
	// returned to it (listed) instead of put on sale.
	Returns bool
}

// Answer is what a partition's operation answered.
type Answer struct {
	Out outcome
	// Status is what an order read (or the final read of an order) saw.
	Status string
	// Owner and Sold are what the final read of a seat saw: Owner 0 when free, ghost when
	// held by an order the client never learned of.
	Owner int
	Sold  bool
}

// ghost owns a seat held by a hold whose answer was lost: an order the client never
// learned of (or no order at all: an orphan hold). Its hold may also have been released
// without a word, so a ghost seat may be free as well.
const ghost = -1

// house owns a house seat: blocked by staff, off sale to everyone until unblocked.
const house = -2

// listed owns a seat returned to a showtime's waiting list: HELD to everyone until the list
// offers it (an offer is a hold by the entrant's order, which takes it) or puts it on sale,
// which it may do at any moment (so a listed seat may be free as well).
const listed = -3

// seatState is a seat as the API promised it.
type seatState struct {
	owner int // 0 free, an order, or ghost
	sold  bool
	// lapsed lists the orders whose hold on the seat ran out (",3,7,"): a late payment of
	// one of them may take the seat again if it is free.
	lapsed string
}

func (s seatState) hasLapsed(o int) bool { return strings.Contains(s.lapsed, ","+strconv.Itoa(o)+",") }

func (s seatState) lapse(o int) seatState {
	s.owner, s.sold = 0, false
	if s.hasLapsed(o) {
		return s
	}
	ids := []int{o}
	for _, f := range strings.Split(strings.Trim(s.lapsed, ","), ",") {
		if n, err := strconv.Atoi(f); err == nil {
			ids = append(ids, n)
		}
	}
	slices.Sort(ids)
	var b strings.Builder
	b.WriteByte(',')
	for _, id := range ids {
		b.WriteString(strconv.Itoa(id))
		b.WriteByte(',')
	}
	s.lapsed = b.String()
	return s
}

// maybeFree: free, a ghost (which may have let the seat go), or listed (which may have
// gone on sale, or be offered).
func (s seatState) maybeFree() bool { return s.owner == 0 || s.owner == ghost || s.owner == listed }

// freed is what a seat freed into next may be: next, or, when the showtime keeps a
// waiting list (a.Returns), returned to it instead.
func freed(next seatState, a Action) []any {
	if !a.Returns {
		return one(next)
	}
	r := next
	r.owner = listed
	return []any{next, r}
}

func (s seatState) String() string {
	var st string
	switch {
	case s.owner == 0:
		st = "free"
	case s.owner == ghost:
		st = "ghost (held by a lost hold, or free)"
	case s.owner == house:
		st = "blocked (a house seat)"
	case s.owner == listed:
		st = "returned to the waiting list (or on sale again)"
	case s.sold:
		st = fmt.Sprintf("sold to order %d", s.owner)
	default:
		st = fmt.Sprintf("held by order %d", s.owner)
	}
	if s.lapsed != "" {
		st += "; lapsed " + strings.Trim(s.lapsed, ",")
	}
	return st
}

func one(s any) []any { return []any{s} }

// seatStep is the seat register's specification.
func seatStep(state, input, output any) []any {
	s, a, ans := state.(seatState), input.(Action), output.(Answer)
	o := a.Order
	held := s.owner == o && !s.sold
	switch a.Kind {
	case actHold:
		switch ans.Out {
		case outOK:
			if s.maybeFree() || held {
				return one(seatState{owner: o, lapsed: s.lapsed})
			}
		case outTaken:
			if s.owner != 0 {
				return one(s)
			}
		case outFree:
			if s.maybeFree() {
				return one(s)
			}
		case outUnknown:
			if s.owner == 0 {
				return one(seatState{owner: ghost, lapsed: s.lapsed})
			}
			return one(s)
		default:
			return one(s)
		}
		return nil
	case actPay:
		paid, paidOK := seatState{owner: o, sold: true, lapsed: s.lapsed}, s.owner == o || (s.maybeFree() && s.hasLapsed(o))
		switch ans.Out {
		case outOK:
			if paidOK {
				return one(paid)
			}
			return nil
		case outExpired: // a late payment that could not have its seats: they are not its
			switch {
			case held:
				return freed(s.lapse(o), a)
			case s.owner == o:
				return nil
			}
			return one(s)
		case outUnknown:
			out := one(s)
			if paidOK {
				out = append(out, paid)
			}
			if held {
				out = append(out, freed(s.lapse(o), a)...)
			}
			return out
		}
		return one(s) // INVALID_STATE and refusals leave the seats alone; the order's partition judges
	case actCancel:
		switch ans.Out {
		case outOK:
			if held {
				return freed(seatState{lapsed: s.lapsed}, a)
			}
			return nil
		case outUnknown:
			if held {
				return append(one(s), freed(seatState{lapsed: s.lapsed}, a)...)
			}
		}
		return one(s)
	case actRefund:
		sold := s.owner == o && s.sold
		switch ans.Out {
		case outOK:
			switch {
			case sold:
				return freed(seatState{lapsed: s.lapsed}, a)
			case held:
				return nil // a pending order has no payment to refund
			}
		case outUnknown:
			if sold {
				return append(one(s), freed(seatState{lapsed: s.lapsed}, a)...)
			}
		}
		return one(s)
	case actRefundSeats:
		sold := s.owner == o && s.sold
		switch {
		case ans.Out == outOK && held:
			return nil // a pending order's seats are not refunded
		case ans.Out == outOK && sold:
			return freed(seatState{lapsed: s.lapsed}, a)
		case ans.Out == outUnknown && sold:
			return append(one(s), freed(seatState{lapsed: s.lapsed}, a)...)
		}
		// An OK for a seat the order no longer has repeats a refund made before (a lost
		// answer's, or the whole order's): it changes nothing.
		return one(s)
	case actBlock:
		blocked := seatState{owner: house, lapsed: s.lapsed}
		switch ans.Out {
		case outOK: // a free seat blocked, or a house seat kept so
			if s.maybeFree() || s.owner == house {
				return one(blocked)
			}
			return nil
		case outTaken: // refused: held or sold
			if s.owner != 0 && s.owner != house {
				return one(s)
			}
			return nil
		case outUnknown:
			if s.maybeFree() {
				return []any{s, blocked}
			}
		}
		return one(s)
	case actUnblock:
		free := seatState{lapsed: s.lapsed}
		switch {
		case s.owner != house: // unblocking a seat that is not blocked changes nothing
			return one(s)
		case ans.Out == outOK:
			return freed(free, a)
		case ans.Out == outUnknown:
			return append(one(s), freed(free, a)...)
		}
		return one(s)
	case actExpire:
		if held {
			return freed(s.lapse(o), a)
		}
		return one(s)
	case actFinal:
		switch {
		case ans.Owner == 0 && s.maybeFree(),
			ans.Owner == house && s.owner == house,
			ans.Owner == listed && s.owner == listed,
			ans.Owner == ghost && !ans.Sold && s.owner == ghost,
			ans.Owner > 0 && ans.Owner == s.owner && ans.Sold == s.sold:
			return one(s)
		}
		return nil
	}
	return one(s) // extend, read, lapse: not the seat's business
}

// Order states of the order model. Due is pending past its expiry: it may be expired,
// paid late or cancelled, not extended.
const (
	orderNone      = ""
	orderPending   = "PENDING_PAYMENT"
	orderDue       = "PENDING_PAYMENT (due)"
	orderPaid      = "PAID"
	orderCancelled = "CANCELLED"
	orderExpired   = "EXPIRED"
)

func isPending(s string) bool { return s == orderPending || s == orderDue }

// orderStep is the order state machine's specification: PENDING_PAYMENT → PAID, CANCELLED
// or EXPIRED; EXPIRED → PAID (a late payment while its seats are free again); PAID →
// CANCELLED (refunded by staff: the order, or its last seats); PAID → PAID (some seats
// refunded). The payment step is tolerant: any payment answered OK
// means the order is PAID, whichever payment it was.
func orderStep(state, input, output any) []any {
	s, a, ans := state.(string), input.(Action), output.(Answer)
	switch a.Kind {
	case actHold:
		if ans.Out == outOK && s == orderNone {
			return one(orderPending)
		}
		return nil
	case actLapse:
		if s == orderPending {
			return one(orderDue)
		}
		return one(s)
	case actExpire:
		switch s {
		case orderPending:
			return nil // the worker expires due orders only
		case orderDue:
			return one(orderExpired)
		}
		return one(s)
	case actRead, actFinal:
		if ans.Status == s || (ans.Status == orderPending && s == orderDue) {
			return one(s)
		}
		return nil
	}
	if s == orderNone {
		return nil // every other operation names an order the client was given
	}
	var ok, expired, invalid []any // the states each answer leads to; nil: that answer is impossible
	switch a.Kind {
	case actPay:
		if s != orderCancelled {
			ok = one(orderPaid)
		}
		if s == orderDue || s == orderExpired {
			expired = one(orderExpired)
		}
		if !isPending(s) {
			invalid = one(s)
		}
	case actCancel:
		if isPending(s) {
			ok = one(orderCancelled)
		} else {
			invalid = one(s)
		}
	case actExtend:
		if s == orderPending {
			ok = one(s)
		}
		if s == orderDue || s == orderExpired {
			expired = one(s)
		}
		if !isPending(s) {
			invalid = one(s)
		}
	case actRefund:
		switch s {
		case orderPaid:
			ok = one(orderCancelled)
		case orderCancelled, orderExpired: // being refunded already: returned as it is
			ok = one(s)
		}
		if s != orderPaid {
			invalid = one(s)
		}
	case actRefundSeats:
		switch s {
		case orderPaid: // some seats (it stays PAID), or every seat left (the whole refund), as it answered
			ok = []any{orderPaid, orderCancelled}
			if ans.Status == orderPaid || ans.Status == orderCancelled {
				ok = one(ans.Status)
			}
		case orderCancelled: // refunded whole already: returned as it is
			ok = one(s)
		}
		if s != orderPaid {
			invalid = one(s)
		}
	}
	switch ans.Out {
	case outOK:
		return ok
	case outExpired:
		return expired
	case outInvalid:
		return invalid
	case outRefused:
		return one(s)
	case outUnknown:
		return append(append(one(s), ok...), expired...)
	}
	return nil // NOT_FOUND: the order exists
}

func describeAction(input, output any) string {
	a, ans := input.(Action), output.(Answer)
	var who string
	switch {
	case a.Order > 0:
		who = fmt.Sprintf("order %d", a.Order)
	default:
		who = "order unknown"
	}
	switch a.Kind {
	case actFinal:
		if ans.Status != "" {
			return fmt.Sprintf("final read: %s", ans.Status)
		}
		return fmt.Sprintf("final read: %s", seatState{owner: ans.Owner, sold: ans.Sold})
	case actRead:
		return fmt.Sprintf("read %s → %s", who, ans.Status)
	}
	at := ""
	if a.Index >= 0 {
		at = fmt.Sprintf(" #%d", a.Index)
	}
	return fmt.Sprintf("%s %s%s → %s", a.Kind, who, at, ans.Out)
}

// seatModel and orderModel are the two specifications as porcupine models.
var seatModel, orderModel = models()

func models() (seat, order porcupine.Model) {
	s := porcupine.NondeterministicModel{
		Init:              func() []any { return one(seatState{}) },
		Step:              seatStep,
		DescribeOperation: describeAction,
		DescribeState:     func(s any) string { return s.(seatState).String() },
	}
	o := porcupine.NondeterministicModel{
		Init:              func() []any { return one(orderNone) },
		Step:              orderStep,
		DescribeOperation: describeAction,
		DescribeState: func(s any) string {
			if s.(string) == orderNone {
				return "not held yet"
			}
			return s.(string)
		},
	}
	return s.ToModel(), o.ToModel()
}
