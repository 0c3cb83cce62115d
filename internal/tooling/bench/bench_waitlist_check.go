package bench

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// The waiting-list section's checks (bench_waitlist.go), over what it reads back from MySQL
// once every released seat was offered. Each returns nil or what it found wrong; the
// section fails when one does.

// wlEntry is one waiting-list entry: its id (join order), its size and the order of its
// offer (0: not offered).
type wlEntry struct {
	id, seats, orderID int
}

// wlOrder is one pending or paid order of the showtime: its seats and when it was made.
type wlOrder struct {
	id      int
	created time.Time
	seats   []int
}

// checkJoinOrder holds the offers to join order. The offerer walks the waiting entries in
// join order and gives each the seats it asks for when they fit what is left of the seats
// it read, so when it offers entry E, every earlier entry still waiting was passed over
// because it asked for more than was left: more than E asked for. Offers are taken in the
// order of their orders' ids (one offerer makes its offers one after another); an earlier
// entry still waiting at E's offer is one with no offer or an offer made after E's. A
// passed-over entry of E's size or smaller is an offer out of join order.
func checkJoinOrder(entries []wlEntry) error {
	es := slices.Clone(entries)
	slices.SortFunc(es, func(a, b wlEntry) int { return a.id - b.id })
	var bad []string
	n := 0
	for i, e := range es {
		if e.orderID == 0 {
			continue
		}
		for _, d := range es[:i] {
			if (d.orderID == 0 || d.orderID > e.orderID) && d.seats <= e.seats {
				n++
				if len(bad) < 3 {
					bad = append(bad, fmt.Sprintf("entry %d (%d seats) offered while entry %d (%d seats) waited", e.id, e.seats, d.id, d.seats))
				}
			}
		}
	}
	if n > 0 {
		return fmt.Errorf("%d offers out of join order: %s", n, strings.Join(bad, "; "))
	}
	return nil
}

// checkOfferedOnce holds the showtime's pending and paid orders to one seat each: a seat
// in two of them was sold or offered twice.
func checkOfferedOnce(orders []wlOrder) error {
	owner := map[int]int{}
	var bad []string
	for _, o := range orders {
		for _, s := range o.seats {
			if prev, ok := owner[s]; ok {
				bad = append(bad, fmt.Sprintf("seat %d in orders %d and %d", s, prev, o.id))
				continue
			}
			owner[s] = o.id
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%d seats in two pending or paid orders: %s", len(bad), strings.Join(bad[:min(3, len(bad))], "; "))
	}
	return nil
}

// checkEveryReleasedOffered holds the offers' orders to the seats released: each released
// seat in one offer, no offer with a seat that was not released.
func checkEveryReleasedOffered(released []int, offers []wlOrder) error {
	want := map[int]bool{}
	for _, s := range released {
		want[s] = true
	}
	got := map[int]bool{}
	for _, o := range offers {
		for _, s := range o.seats {
			if !want[s] {
				return fmt.Errorf("order %d offers seat %d, which was not released", o.id, s)
			}
			got[s] = true
		}
	}
	var missing []int
	for _, s := range released {
		if !got[s] {
			missing = append(missing, s)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%d of the %d released seats were never offered (e.g. seat %d)", len(missing), len(released), missing[0])
	}
	return nil
}

// offerDelays is, for each released seat, the time from its release (releasedAt: when the
// release script ran) to the creation of the order that offered it.
func offerDelays(releasedAt map[int]time.Time, offers []wlOrder) (latencies, error) {
	var out latencies
	for _, o := range offers {
		for _, s := range o.seats {
			at, ok := releasedAt[s]
			if !ok {
				return nil, fmt.Errorf("no release heard for seat %d", s)
			}
			out = append(out, max(0, o.created.Sub(at)))
		}
	}
	return out, nil
}
