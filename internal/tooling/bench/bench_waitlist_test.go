package bench

import (
	"strings"
	"testing"
	"time"
)

// TestCheckJoinOrder: an entry offered while an earlier one of its size or smaller waited
// fails the check; earlier entries asking for more, or offered first, do not.
func TestCheckJoinOrder(t *testing.T) {
	good := []wlEntry{
		{id: 1, seats: 4, orderID: 12}, // passed over by the first offer (2 seats left), offered later
		{id: 2, seats: 2, orderID: 10},
		{id: 3, seats: 3},              // waits: larger than what the offers after it took
		{id: 4, seats: 1, orderID: 11}, // 1 < 3 and 1 < 4: the larger ones could not take what was left
		{id: 5, seats: 2},
	}
	if err := checkJoinOrder(good); err != nil {
		t.Errorf("in join order: %v", err)
	}
	bad := append([]wlEntry{}, good...)
	bad[4] = wlEntry{id: 5, seats: 1, orderID: 13} // entry 5 (1 seat) offered after entry 4, fine
	bad = append(bad, wlEntry{id: 6, seats: 3, orderID: 14})
	err := checkJoinOrder(bad) // entry 6 (3 seats) offered while entry 3 (3 seats) waited
	if err == nil || !strings.Contains(err.Error(), "entry 6 (3 seats) offered while entry 3 (3 seats) waited") {
		t.Errorf("out of join order: %v", err)
	}
}

// TestCheckOffers: a seat in two live orders, a released seat never offered, an offer of a
// seat not released each fail their check.
func TestCheckOffers(t *testing.T) {
	orders := []wlOrder{{id: 1, seats: []int{1, 2}}, {id: 2, seats: []int{3}}}
	if err := checkOfferedOnce(orders); err != nil {
		t.Error(err)
	}
	if err := checkOfferedOnce(append(orders, wlOrder{id: 3, seats: []int{2}})); err == nil || !strings.Contains(err.Error(), "seat 2 in orders 1 and 3") {
		t.Errorf("seat offered twice: %v", err)
	}
	if err := checkEveryReleasedOffered([]int{1, 2, 3}, orders); err != nil {
		t.Error(err)
	}
	if err := checkEveryReleasedOffered([]int{1, 2, 3, 4}, orders); err == nil || !strings.Contains(err.Error(), "1 of the 4 released seats") {
		t.Errorf("seat never offered: %v", err)
	}
	if err := checkEveryReleasedOffered([]int{1, 2}, orders); err == nil {
		t.Error("an offer of a seat not released passed")
	}
}

func TestOfferDelays(t *testing.T) {
	t0 := time.Unix(1000, 0)
	offers := []wlOrder{{id: 1, created: t0.Add(300 * time.Millisecond), seats: []int{1, 2}}}
	got, err := offerDelays(map[int]time.Time{1: t0, 2: t0.Add(100 * time.Millisecond)}, offers)
	if err != nil || len(got) != 2 || got[0] != 300*time.Millisecond || got[1] != 200*time.Millisecond {
		t.Errorf("offerDelays = %v, %v", got, err)
	}
	if _, err := offerDelays(map[int]time.Time{1: t0}, offers); err == nil {
		t.Error("a seat with no release heard passed")
	}
}
