package app

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

const cancelOrderQ = `mutation($id: ID!) { cancelOrder(orderId: $id) { id status } }`

// TestDemoWaitlistBrowser drives the demo page's waiting list in real headless Chromium on
// a sold-out showtime of four seats, held by other customers through the API: the customer
// joins the list on the page (and leaves it, and joins again), a holder cancels and the
// page shows the offer live (its seats, a running countdown); Decline puts the seats on
// sale; once sold out again, a second offer is paid from the page and its seats are sold.
func TestDemoWaitlistBrowser(t *testing.T) {
	browser := newBrowser(t)
	a := newTestApp(t)
	startsAt := testNow.Add(30 * time.Hour)
	show := a.createShowtime(a.createMovie("Encore", 120), a.createHall("Small hall", 1, 4), startsAt)
	seats := a.openSales(show) // A1..A4
	carol, dave, erin := a.token("carol", "customer"), a.token("dave", "customer"), a.token("erin", "customer")
	carolOrder := a.hold(carol, show, seats[:2], "wl-demo-carol")
	daveOrder := a.hold(dave, show, seats[2:], "wl-demo-dave")

	alice := a.token("demo-alice", "customer")
	b := openTab(t, browser, "alice's tab")
	b.open(a.srv.URL, startsAt.Format("2006-01-02"), show, alice)
	b.do("the sold-out showtime offers the waiting list",
		chromedp.WaitVisible(chromedp.CSS(`#waitlist[data-status=""]`)),
		chromedp.WaitVisible(chromedp.CSS(`#waitlist-join`)),
		chromedp.WaitNotVisible(chromedp.CSS(`#waitlist-leave`)),
	)
	if s := b.text("#waitlist-status"); !strings.Contains(s, "Sold out") {
		t.Errorf("the sold-out showtime's panel says %q", s)
	}

	// Join for one seat, leave, join again for two.
	b.do("join for one seat",
		chromedp.SetValue(chromedp.CSS(`#waitlist-seats`), "1"),
		chromedp.Click(chromedp.CSS(`#waitlist-join`)),
		chromedp.WaitVisible(chromedp.CSS(`#waitlist[data-status="WAITING"] #waitlist-leave`)),
		chromedp.WaitReady(chromedp.CSS(`#waitlist-live[data-state="live"]`)),
	)
	b.do("leave", chromedp.Click(chromedp.CSS(`#waitlist-leave`)), chromedp.WaitVisible(chromedp.CSS(`#waitlist[data-status="LEFT"]`)))
	b.do("join again for two seats",
		chromedp.SetValue(chromedp.CSS(`#waitlist-seats`), "2"),
		chromedp.Click(chromedp.CSS(`#waitlist-join`)),
		chromedp.WaitVisible(chromedp.CSS(`#waitlist[data-status="WAITING"]`)),
		chromedp.WaitReady(chromedp.CSS(`#waitlist-live[data-state="live"]`)),
	)
	if pos, size, s := b.text("#waitlist-position"), b.text("#waitlist-size"), b.text("#waitlist-status"); pos != "1" || size != "2" ||
		!strings.Contains(s, "number 1") {
		t.Errorf("waiting: place %q, seats %q, %q", pos, size, s)
	}

	// carol cancels: A1 and A2 come back to the list and are offered to alice, live.
	a.must(carol, cancelOrderQ, map[string]any{"id": carolOrder.ID}, nil)
	first := b.waitOffer("the offer of A1 and A2", "A1, A2")
	for _, id := range seats[:2] {
		b.do("the offer's seats are alice's on the map", chromedp.WaitReady(seatSel(id, `[data-status="held"][data-mine="true"]`)))
	}
	a.wantCode(erin, holdQ, holdVars(show, seats[:1], "wl-demo-erin-early"), "SEATS_UNAVAILABLE")
	// A copy outside the test's temp dir, to look at after the run.
	shot := filepath.Join(os.TempDir(), "seatflow-demo-waitlist.png")
	b.screenshot(shot)
	t.Logf("screenshot of the offer: %s", shot)

	b.do("decline", chromedp.Click(chromedp.CSS(`#waitlist-decline`)),
		chromedp.WaitVisible(chromedp.CSS(`#waitlist[data-status="DECLINED"]`)),
		chromedp.WaitReady(chromedp.CSS(`#message[data-code="DECLINED"]`)))
	// Nobody else waits: the seats go on sale, and the showtime is not sold out any more.
	b.waitSeat(seats[0], "available")
	b.do("no join while seats are free", chromedp.WaitNotVisible(chromedp.CSS(`#waitlist-join`)))
	if got := a.orderState(alice, first).Status; got != "CANCELLED" {
		t.Errorf("the declined offer's order is %s, want CANCELLED", got)
	}

	// erin takes them: sold out again. alice joins again; dave cancels; alice pays the offer.
	a.hold(erin, show, seats[:2], "wl-demo-erin")
	b.waitSeat(seats[0], "held")
	b.do("join again", chromedp.WaitVisible(chromedp.CSS(`#waitlist-join`)), chromedp.Click(chromedp.CSS(`#waitlist-join`)),
		chromedp.WaitVisible(chromedp.CSS(`#waitlist[data-status="WAITING"]`)))
	a.must(dave, cancelOrderQ, map[string]any{"id": daveOrder.ID}, nil)
	second := b.waitOffer("the offer of A3 and A4", "A3, A4")
	b.do("pay the offer", chromedp.Click(chromedp.CSS(`#waitlist-pay`)),
		chromedp.WaitVisible(chromedp.CSS(`#waitlist[data-status="ACCEPTED"]`)),
		chromedp.WaitReady(chromedp.CSS(`#message[data-code="PAID"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#tickets`)),
		chromedp.WaitNotVisible(chromedp.CSS(`#waitlist-offer`)),
		chromedp.WaitNotVisible(chromedp.CSS(`#order`)))
	b.waitSeat(seats[2], "sold")
	b.waitSeat(seats[3], "sold")
	if got := a.orderState(alice, second).Status; got != "PAID" {
		t.Errorf("the paid offer's order is %s, want PAID", got)
	}
	var mine struct{ MyWaitingListEntries []struct{ Status string } }
	a.must(alice, `{ myWaitingListEntries { status } }`, nil, &mine)
	var statuses []string
	for _, e := range mine.MyWaitingListEntries {
		statuses = append(statuses, e.Status)
	}
	if got := strings.Join(statuses, " "); got != "ACCEPTED DECLINED LEFT" {
		t.Errorf("alice's entries, newest first: %s, want ACCEPTED DECLINED LEFT", got)
	}
	b.assertOffline(a.srv.URL)
}

// waitOffer waits for the page to show an offer of seats (labels as "A1, A2") with its
// countdown running down from the offer's 10 minutes, and returns the offer's order id.
func (b *tab) waitOffer(what, labels string) string {
	b.t.Helper()
	b.do(what, chromedp.WaitVisible(chromedp.CSS(`#waitlist[data-status="OFFERED"] #waitlist-pay`)),
		chromedp.WaitVisible(chromedp.CSS(`#waitlist-decline`)),
		chromedp.WaitNotVisible(chromedp.CSS(`#waitlist-leave`)))
	if s := b.text("#waitlist-offer-seats"); s != "Seats "+labels {
		b.t.Errorf("%s: the offer shows %q, want seats %s", what, s, labels)
	}
	if cd := b.text("#waitlist-countdown"); !strings.HasPrefix(cd, "9:") && cd != "10:00" {
		b.t.Errorf("%s: countdown %q, want about 10 minutes", what, cd)
	}
	// The countdown runs: a second later it shows less.
	read := func(js string) string {
		ctx, cancel := context.WithTimeout(b.ctx, browserWait)
		defer cancel()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		if err != nil {
			b.t.Fatalf("%s: %s: %v", what, js, err)
		}
		return s
	}
	const remaining = `document.getElementById('waitlist-countdown').dataset.remaining`
	before, _ := strconv.Atoi(read(remaining))
	time.Sleep(1100 * time.Millisecond)
	if after, _ := strconv.Atoi(read(remaining)); before < 500 || after >= before {
		b.t.Errorf("%s: the countdown went from %d to %d s", what, before, after)
	}
	return read(`document.getElementById('waitlist-offer').dataset.orderId`)
}
