package faults

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// Seat-map reads and live frames are not linearizable (a read may be served from the live
// hub's copy, a frame travels after the change): they promise bounded staleness. This file
// measures the bound against the linearization porcupine found for each seat.

// step is one operation of a seat's linearization: its call and return, and the statuses
// the seat may show after it (several after an operation whose answer was lost).
type step struct {
	call, ret int64
	after     []string
}

// Staleness is the measured staleness of seat-map reads or live frames.
type Staleness struct {
	// Observations: seat statuses compared (a read's seats; a change × a watcher for frames).
	Observations int `json:"observations"`
	// Stale: reads that showed a status the seat had surely left before the read was sent;
	// for frames, changes a watcher showed after the operation had returned.
	Stale int `json:"stale"`
	// Impossible: reads that showed a status the seat never had then (0 if all is well);
	// Missed: changes a watcher never showed before the seat changed again or the run ended.
	Impossible int `json:"impossible"`
	Missed     int `json:"missed"`
	// P50MS, P99MS and MaxMS: how far behind, over every observation (0 when current).
	P50MS float64 `json:"p50Ms"`
	P99MS float64 `json:"p99Ms"`
	MaxMS float64 `json:"maxMs"`
	// Worst describes the stalest observation, FirstImpossible the first impossible one.
	Worst           string `json:"worst,omitempty"`
	FirstImpossible string `json:"firstImpossible,omitempty"`
}

func statusOf(s seatState) []string {
	switch {
	case s.owner == 0:
		return []string{"AVAILABLE"}
	case s.owner == ghost:
		return []string{"AVAILABLE", "HELD"}
	case s.owner == house:
		return []string{"BLOCKED"}
	case s.owner == listed:
		return []string{"HELD", "AVAILABLE"}
	case s.sold:
		return []string{"SOLD"}
	}
	return []string{"HELD"}
}

// replay walks a seat's linearization through the model and notes its statuses.
func (h *History) replay(p *partition, info porcupine.LinearizationInfo) []*step {
	var order []int
	for _, lin := range info.PartialLinearizations()[0] {
		if len(lin) == len(p.ops) {
			order = lin
			break
		}
	}
	if order == nil {
		return nil
	}
	state := p.model.Init()
	out := make([]*step, 0, len(order))
	for _, i := range order {
		op := p.ops[i]
		_, state = p.model.Step(state, op.Input, op.Output)
		st := &step{call: op.Call, ret: op.Return}
		for _, s := range state.([]any) {
			for _, x := range statusOf(s.(seatState)) {
				if !slices.Contains(st.after, x) {
					st.after = append(st.after, x)
				}
			}
		}
		out = append(out, st)
	}
	return out
}

// readStaleness measures the seat-map reads: a read is current if what it showed of a seat
// was the seat's status at some moment while it was in flight; otherwise it is as stale as
// the time between the moment that status surely ended and the read's start.
func (h *History) readStaleness(reads []SeatRead) Staleness {
	var st Staleness
	var lags []time.Duration
	for _, r := range reads {
		start, end := h.at(r.Start), h.at(r.End)
		for seat, x := range r.Seats {
			lin := h.linearized[seat]
			if lin == nil {
				continue
			}
			st.Observations++
			before := []string{"AVAILABLE"} // the statuses after the first k operations
			var lastEnd int64 = -1          // the latest moment a matching status surely ended
			current := false
			for k := 0; k <= len(lin); k++ {
				callK := int64(beforeRun)
				if k > 0 {
					callK, before = lin[k-1].call, lin[k-1].after
				}
				retNext := int64(never)
				if k < len(lin) {
					retNext = lin[k].ret
				}
				if !slices.Contains(before, x) || callK > end {
					continue
				}
				if retNext >= start {
					current = true
					break
				}
				lastEnd = max(lastEnd, retNext)
			}
			switch {
			case current:
				lags = append(lags, 0)
			case lastEnd < 0:
				if st.Impossible == 0 {
					st.FirstImpossible = fmt.Sprintf("a seat map of instance %d sent %s into the run showed seat %d %s; its statuses: %s",
						r.Instance, r.Start.Sub(h.base).Round(time.Millisecond), seat, x, h.describe(lin))
				}
				st.Impossible++
			default:
				st.Stale++
				lag := time.Duration(start - lastEnd)
				if len(lags) == 0 || lag > slices.Max(lags) {
					st.Worst = fmt.Sprintf("a seat map of instance %d sent %s into the run showed seat %d %s, a status it had surely left %s before",
						r.Instance, r.Start.Sub(h.base).Round(time.Millisecond), seat, x, lag.Round(time.Millisecond))
				}
				lags = append(lags, lag)
			}
		}
	}
	st.fill(lags)
	return st
}

// beforeRun is the call time of a seat's initial status (free before anything happened).
const beforeRun = -1 << 62

// seen is one status a watcher showed for a seat, and when.
type seen struct {
	at     time.Time
	status string
}

// frameLag measures the live frames: for every change of a seat (an operation after which
// the seat has one status, not the one before), how long after the operation returned
// each watcher showed it (0 when before). A change the watcher never showed before the
// seat surely changed again (coalesced, or the watcher was reconnecting) counts as missed.
func (h *History) frameLag(watchers []map[int][]seen) Staleness {
	var st Staleness
	var lags []time.Duration
	for seat, lin := range h.linearized {
		for k, s := range lin {
			if len(s.after) != 1 || s.ret == never || (k > 0 && slices.Equal(lin[k-1].after, s.after)) {
				continue
			}
			// The watcher may show it until the next change has surely happened.
			until := int64(never)
			for _, next := range lin[k+1:] {
				if !slices.Equal(next.after, s.after) {
					until = next.ret
					break
				}
			}
			for wi, w := range watchers {
				st.Observations++
				shown := int64(-1)
				for _, x := range w[seat] {
					t := h.at(x.at)
					if t >= s.call && t <= until && x.status == s.after[0] {
						shown = t
						break
					}
				}
				switch {
				case shown < 0:
					st.Missed++
				case shown > s.ret:
					st.Stale++
					lag := time.Duration(shown - s.ret)
					if len(lags) == 0 || lag > slices.Max(lags) {
						st.Worst = fmt.Sprintf("watcher %d showed seat %d %s %s after the operation that made it so returned, %s into the run",
							wi, seat, s.after[0], lag.Round(time.Millisecond), time.Duration(s.ret).Round(time.Millisecond))
					}
					lags = append(lags, lag)
				default:
					lags = append(lags, 0)
				}
			}
		}
	}
	st.fill(lags)
	return st
}

func (st *Staleness) fill(lags []time.Duration) {
	if len(lags) == 0 {
		return
	}
	slices.Sort(lags)
	at := func(q float64) float64 { return ms(lags[min(len(lags)-1, int(q*float64(len(lags))))]) }
	st.P50MS, st.P99MS, st.MaxMS = at(0.5), at(0.99), ms(lags[len(lags)-1])
}

// describe lists a seat's linearization: each operation's window and the statuses after it.
func (h *History) describe(lin []*step) string {
	var b []string
	for _, s := range lin {
		ret := "∞"
		if s.ret != never {
			ret = time.Duration(s.ret).Round(time.Millisecond).String()
		}
		b = append(b, fmt.Sprintf("[%s, %s] %v", time.Duration(s.call).Round(time.Millisecond), ret, s.after))
	}
	return strings.Join(b, "; ")
}
