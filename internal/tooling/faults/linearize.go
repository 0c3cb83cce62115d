package faults

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"seatflow"
)

// partitionLimit is how long porcupine may search one partition. A partition holds the
// operations of one seat or one order (tens of them): it is decided in milliseconds, and
// one still undecided after this is reported as a violation, never taken as passed.
const partitionLimit = 20 * time.Second

// never is the return time of an operation whose answer was lost: it may take effect at
// any moment after its call, or never.
const never = math.MaxInt64

// History is what the linearizability checker checks: the calls, when each order's hold
// may first have run out, and what the stores held once the run was over.
type History struct {
	Calls []Call `json:"calls"`
	// Due is, per order, the earliest moment its hold may have run out on any instance's clock.
	Due map[int]time.Time `json:"due"`
	// FinalStart and FinalEnd bound the direct read of the stores after the reconciler's
	// last run; FinalSeats (seat → its owner, as Answer.Owner/Sold) and FinalOrders (order →
	// status, for every order a client was given) are what it read.
	FinalStart  time.Time      `json:"finalStart"`
	FinalEnd    time.Time      `json:"finalEnd"`
	FinalSeats  map[int]Answer `json:"finalSeats"`
	FinalOrders map[int]string `json:"finalOrders"`
	// Lost are the seats whose Redis state a fault lost, from when (Recorder.SeatsLost).
	Lost map[int]time.Time `json:"lost,omitempty"`
	// Waitlist says the showtime kept a waiting list: seats freed may have been returned to
	// it, and its offers are in Calls as holds of the entrants' orders (waitlist.go).
	Waitlist   bool            `json:"waitlist,omitempty"`
	seatsOf    map[int][]int   // order → its seats (from its hold)
	base       time.Time       // time 0 of the porcupine operations
	partitions []*partition    // built by split
	linearized map[int][]*step // seat → its operations in the order porcupine found (checked OK)
}

// partition is one seat's or one order's operations.
type partition struct {
	name  string
	seat  int // 0 for an order's partition
	model porcupine.Model
	ops   []porcupine.Operation
}

// Linearizability is what the checker found, for the report.
type Linearizability struct {
	// Calls are the client operations recorded (holds, payments, cancels, extends, refunds,
	// order reads), by operation; Lost those whose answer was lost or said a retry may help.
	Calls map[string]int `json:"calls"`
	Lost  int            `json:"lost"`
	// Operations are the porcupine operations checked over all Partitions (a hold counts
	// once per seat; expiries and the final reads are operations too).
	Operations int `json:"operations"`
	Partitions int `json:"partitions"`
	// Illegal and Undecided name the partitions with no linearization, and those not decided
	// within partitionLimit; Files the visualisations written for them.
	Illegal   []string `json:"illegal"`
	Undecided []string `json:"undecided"`
	Files     []string `json:"files"`
	// CheckMS is how long porcupine took over every partition.
	CheckMS float64 `json:"checkMs"`
	// Reads and Frames are the staleness of seat-map reads and live frames (staleness.go).
	Reads  Staleness `json:"reads"`
	Frames Staleness `json:"frames"`
}

func (h *History) at(t time.Time) int64 { return t.Sub(h.base).Nanoseconds() }

// seatAnswer is what a hold's answer says of one of its seats. A refusal naming other
// seats says this one was free, except once Redis has lost the seat's state (its hold is
// in MySQL only, until the reconciler holds it again): the script that refused saw it
// free in Redis, which is no longer the truth, so the refusal says nothing of it.
func (h *History) seatAnswer(c Call, seat int) outcome {
	if c.Code == seatflow.ESEATSUNAVAILABLE {
		switch {
		case !c.Named:
			return outUnknown
		case slices.Contains(c.Taken, seat):
			return outTaken
		}
		if at, ok := h.Lost[seat]; ok && c.End.After(at) {
			return outRefused
		}
		return outFree
	}
	return outcomeOf(c.Code)
}

// split builds the partitions: one per seat, one per order.
func (h *History) split() {
	h.base = h.FinalStart
	for _, c := range h.Calls {
		if c.Start.Before(h.base) {
			h.base = c.Start
		}
	}
	h.base = h.base.Add(-time.Second)
	h.seatsOf = map[int][]int{}
	for _, c := range h.Calls {
		if c.Op == OpHold && c.Code == CodeOK && c.Order > 0 {
			h.seatsOf[c.Order] = c.Seats
		}
	}
	seats, orders := map[int]*partition{}, map[int]*partition{}
	seatPart := func(id int) *partition {
		if seats[id] == nil {
			seats[id] = &partition{name: fmt.Sprintf("seat-%d", id), seat: id, model: seatModel}
		}
		return seats[id]
	}
	orderPart := func(id int) *partition {
		if orders[id] == nil {
			orders[id] = &partition{name: fmt.Sprintf("order-%d", id), model: orderModel}
		}
		return orders[id]
	}
	add := func(p *partition, client int, a Action, ans Answer, call, ret int64) {
		if ans.Out == outUnknown && a.Kind != actFinal && a.Kind != actRead {
			ret = never
		}
		a.Returns = h.Waitlist
		p.ops = append(p.ops, porcupine.Operation{ClientId: client, Input: a, Output: ans, Call: call, Return: ret})
	}
	for i, c := range h.Calls {
		call, ret := h.at(c.Start), h.at(c.End)
		order := 0
		if c.Code == CodeOK || c.Op != OpHold {
			order = c.Order
		}
		a := Action{Order: order, Index: i}
		switch c.Op {
		case OpHold:
			a.Kind = actHold
			for _, s := range c.Seats {
				add(seatPart(s), c.Customer, a, Answer{Out: h.seatAnswer(c, s)}, call, ret)
			}
			if order > 0 {
				add(orderPart(order), c.Customer, a, Answer{Out: outOK}, call, ret)
			}
			continue
		case OpBlock, OpUnblock: // the seats' business alone
			a.Kind, a.Order = actBlock, 0
			if c.Op == OpUnblock {
				a.Kind = actUnblock
			}
			for _, s := range c.Seats {
				add(seatPart(s), c.Customer, a, Answer{Out: h.seatAnswer(c, s)}, call, ret)
			}
			continue
		case OpPay:
			a.Kind = actPay
		case OpCancel:
			a.Kind = actCancel
		case OpRefund:
			a.Kind = actRefund
		case OpRefundSeats:
			a.Kind = actRefundSeats
		case OpExtend:
			a.Kind = actExtend
		case OpOrder:
			if c.Code != CodeOK {
				continue // a read that failed saw nothing
			}
			add(orderPart(order), c.Customer, Action{Kind: actRead, Order: order, Index: i}, Answer{Out: outOK, Status: c.Status}, call, ret)
			continue
		default:
			continue
		}
		ans := Answer{Out: outcomeOf(c.Code)}
		if a.Kind == actRefundSeats && ans.Out == outOK {
			ans.Status = c.Status // PAID: some seats; CANCELLED: every seat left
		}
		add(orderPart(order), c.Customer, a, ans, call, ret)
		touched := h.seatsOf[order]
		switch a.Kind {
		case actExtend:
			touched = nil
		case actRefundSeats:
			touched = c.Seats // only the seats it named
		}
		for _, s := range touched {
			add(seatPart(s), c.Customer, a, ans, call, ret)
		}
	}
	const checker = 99 // the lane of what no client did: expiries and the final reads
	for o, due := range h.Due {
		if _, ok := h.seatsOf[o]; !ok {
			continue
		}
		call := h.at(due)
		add(orderPart(o), checker, Action{Kind: actLapse, Order: o, Index: -1}, Answer{}, call, never)
		add(orderPart(o), checker, Action{Kind: actExpire, Order: o, Index: -1}, Answer{}, call, never)
		for _, s := range h.seatsOf[o] {
			add(seatPart(s), checker, Action{Kind: actExpire, Order: o, Index: -1}, Answer{}, call, never)
		}
	}
	fs, fe := h.at(h.FinalStart), h.at(h.FinalEnd)
	for s, ans := range h.FinalSeats {
		if seats[s] != nil || ans.Owner != 0 {
			ans.Out = outOK
			add(seatPart(s), checker, Action{Kind: actFinal, Index: -1}, ans, fs, fe)
		}
	}
	for o := range h.seatsOf {
		add(orderPart(o), checker, Action{Kind: actFinal, Order: o, Index: -1}, Answer{Out: outOK, Status: h.FinalOrders[o]}, fs, fe)
	}
	h.partitions = h.partitions[:0]
	for _, m := range []map[int]*partition{seats, orders} {
		ids := make([]int, 0, len(m))
		for id := range m {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			h.partitions = append(h.partitions, m[id])
		}
	}
}

// historySuffix ends the name of a scenario's history in the results directory.
const historySuffix = "-history.json"

// Check checks every partition with porcupine. On a partition with no linearization it
// writes porcupine's visualisation (and the whole history as JSON) into dir, named after
// prefix and the partition.
func (h *History) Check(dir, prefix string) Linearizability {
	h.split()
	res := Linearizability{Calls: map[string]int{}}
	for _, c := range h.Calls {
		res.Calls[c.Op]++
		if outcomeOf(c.Code) == outUnknown && c.Code != seatflow.ESEATSUNAVAILABLE && c.Code != seatflow.ELIMIT {
			res.Lost++
		}
	}
	h.linearized = map[int][]*step{}
	began := time.Now()
	for _, p := range h.partitions {
		res.Partitions++
		res.Operations += len(p.ops)
		verdict, info := porcupine.CheckOperationsVerbose(p.model, p.ops, partitionLimit)
		switch verdict {
		case porcupine.Ok:
			if p.seat > 0 {
				h.linearized[p.seat] = h.replay(p, info)
			}
			continue
		case porcupine.Illegal:
			res.Illegal = append(res.Illegal, p.name)
		default:
			res.Undecided = append(res.Undecided, p.name)
		}
		if dir == "" {
			continue
		}
		path := filepath.Join(dir, prefix+"-"+p.name+".html")
		if err := porcupine.VisualizePath(p.model, info, path); err != nil {
			res.Files = append(res.Files, fmt.Sprintf("(%s not written: %v)", path, err))
		} else {
			res.Files = append(res.Files, path)
		}
	}
	res.CheckMS = float64(time.Since(began).Microseconds()) / 1000
	if dir != "" { // every history, for a look afterwards; named beside a violation's pictures
		path := filepath.Join(dir, prefix+historySuffix)
		b, err := json.MarshalIndent(h, "", " ")
		if err == nil {
			err = os.WriteFile(path, b, 0o644)
		}
		switch {
		case len(res.Illegal)+len(res.Undecided) == 0:
		case err != nil:
			res.Files = append(res.Files, fmt.Sprintf("(%s not written: %v)", path, err))
		default:
			res.Files = append(res.Files, path)
		}
	}
	return res
}

// Failures are the checker's findings as violations of the scenario.
func (l Linearizability) Failures() []string {
	var out []string
	if len(l.Illegal) > 0 {
		out = append(out, fmt.Sprintf("not linearizable: %d partitions (%s); porcupine's visualisation: %s",
			len(l.Illegal), strings.Join(l.Illegal[:min(len(l.Illegal), 8)], ", "), strings.Join(l.Files, " ")))
	}
	if len(l.Undecided) > 0 {
		out = append(out, fmt.Sprintf("porcupine did not decide %d partitions within %s (%s)", len(l.Undecided), partitionLimit,
			strings.Join(l.Undecided[:min(len(l.Undecided), 8)], ", ")))
	}
	return out
}
