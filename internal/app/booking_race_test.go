package app

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"
)

// Finding: extendHold racing cancelOrder on another instance answered success with status
// CANCELLED (4 of 20 tries). An extendHold that succeeds answers a pending order; one that
// lost the race is INVALID_STATE.
func TestExtendHoldRacingCancel(t *testing.T) {
	a := newTestApp(t, "-holds-per-minute", "0", "-order-changes-per-minute", "0")
	b := a.siblingWith("-order-changes-per-minute", "0")
	hall := a.createHall("Race", 5, 10)
	show := a.createShowtime(a.createMovie("Heat", 170), hall, testNow.Add(30*time.Hour))
	seats := a.openSales(show)

	const tries = 50
	extended, refused := 0, 0
	for i := range tries {
		user := a.token(fmt.Sprintf("racer-%d", i), "customer")
		o := a.hold(user, show, []string{seats[0]}, "race") // each try cancels it
		vars := map[string]any{"id": o.ID}
		a.clock.Advance(time.Minute) // an extension that moves the expiry
		b.clock.Advance(time.Minute)
		var extend, cancel *gqlResponse
		var wg sync.WaitGroup
		start := make(chan struct{})
		wg.Add(2)
		go func() {
			defer wg.Done()
			<-start
			extend = a.do(user, `mutation($id: ID!) { extendHold(orderId: $id) { id status } }`, vars)
		}()
		go func() {
			defer wg.Done()
			<-start
			time.Sleep(time.Duration(i%25) * 200 * time.Microsecond) // the tries spread over the extend's whole run
			cancel = b.do(user, `mutation($id: ID!) { cancelOrder(orderId: $id) { id status } }`, vars)
		}()
		close(start)
		wg.Wait()
		if len(cancel.Errors) > 0 {
			t.Fatalf("try %d: cancelOrder of a pending order failed: %+v", i, cancel.Errors)
		}
		switch code := extend.Code(); code {
		case "":
			var got struct{ ExtendHold struct{ Status string } }
			if err := json.Unmarshal(extend.Data, &got); err != nil {
				t.Fatal(err)
			}
			if got.ExtendHold.Status != "PENDING_PAYMENT" {
				t.Fatalf("try %d: extendHold answered success with status %s, want PENDING_PAYMENT or INVALID_STATE", i, got.ExtendHold.Status)
			}
			extended++
		case "INVALID_STATE":
			refused++
		default:
			t.Fatalf("try %d: extendHold answered %s: %+v", i, code, extend.Errors)
		}
	}
	t.Logf("%d tries: extendHold succeeded on a pending order %d times, INVALID_STATE %d times", tries, extended, refused)
}
