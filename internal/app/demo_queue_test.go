package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestDemoQueueBrowser drives the demo page on a showtime with an on-sale queue in real
// headless Chromium: two customers in two tabs see the waiting room before the seat map
// (their place, the count waiting, live), the queue opens at opensAt and admits one of
// them, whose tab shows the seat map and holds with the pass, while the other's shows its
// position, still without the seat map.
func TestDemoQueueBrowser(t *testing.T) {
	browser := newBrowser(t)
	a := newTestApp(t)
	hall := a.createHall("Premiere hall", 2, 6)
	startsAt := testNow.Add(3 * time.Hour)
	show := a.createShowtime(a.createMovie("Premiere", 150), hall, startsAt)
	a.must(a.admin, setQueueQ, map[string]any{"id": show, "in": map[string]any{
		"opensAt": testNow.Add(2 * time.Minute).Format(time.RFC3339), "admitPerMinute": 60}}, nil)
	date := startsAt.Format("2006-01-02")

	tabs := []*tab{openTab(t, browser, "alice's tab")}
	tabs[0].open(a.srv.URL, date, show, a.token("demo-alice", "customer"))
	tabs = append(tabs, openTab(t, tabs[0].ctx, "bob's tab"))
	tabs[1].open(a.srv.URL, date, show, a.token("demo-bob", "customer"))
	for _, b := range tabs {
		b.do("the waiting room shows, the seat map does not",
			chromedp.WaitVisible(chromedp.CSS(`#queue[data-status="WAITING"]`)),
			chromedp.WaitReady(chromedp.CSS(`#queue-live[data-state="live"]`)),
			chromedp.WaitNotVisible(chromedp.CSS(`#hall`)),
		)
		if s := b.text("#queue-status"); !strings.Contains(s, "drawn at random") {
			t.Errorf("%s before opensAt says %q", b.name, s)
		}
	}
	// bob's join reaches alice's tab with the next push (at least every 15 s): both count 2.
	pollCtx, stopPoll := context.WithTimeout(tabs[0].ctx, 25*time.Second)
	if _, err := chromedp.Run(pollCtx, chromedp.Poll[chromedp.Void](`document.getElementById('queue-waiting').textContent === '2'`,
		chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("alice's tab never counted bob (pushes at least every 15 s): %v; %s", err, tabs[0].text("#queue-waiting"))
	}
	stopPoll()
	shot := filepath.Join(t.TempDir(), "demo-queue-waiting.png")
	tabs[1].screenshot(shot)

	// opensAt: an instance's admission opens the sale and admits one (60 a minute).
	a.clock.Advance(2 * time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var admitted, waiting *tab
	for admitted == nil && ctx.Err() == nil {
		for i, b := range tabs {
			c, stop := context.WithTimeout(b.ctx, 2*time.Second)
			status, _ := chromedp.Run(c, chromedp.Evaluate[string](`document.getElementById('queue').dataset.status`))
			stop()
			if status == "ADMITTED" {
				admitted, waiting = b, tabs[1-i]
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if admitted == nil {
		t.Fatalf("nobody's tab shows the admission: %s / %s", tabs[0].debug(), tabs[1].debug())
	}
	admitted.do("the admitted tab shows the seat map", chromedp.WaitVisible(chromedp.CSS(`#hall`)))
	admitted.do("select two seats",
		chromedp.Click(chromedp.CSS(`.seat[data-row="A"][data-number="3"]`)),
		chromedp.Click(chromedp.CSS(`.seat[data-row="A"][data-number="4"]`)),
		chromedp.WaitReady(chromedp.CSS(`.seat[data-row="A"][data-number="4"][data-selected="true"]`)))
	admitted.do("hold them with the pass",
		chromedp.Click(chromedp.CSS(`#hold-btn`)),
		chromedp.WaitVisible(chromedp.CSS(`#order-status[data-status="PENDING_PAYMENT"]`)),
	)
	if s := admitted.text("#queue-status"); !strings.Contains(s, "your turn") {
		t.Errorf("the admitted tab says %q", s)
	}
	waiting.do("the other tab waits first in line, live, without the seat map",
		chromedp.WaitVisible(chromedp.CSS(`#queue[data-status="WAITING"]`)),
		chromedp.Poll[chromedp.Void](`document.getElementById('queue-position').textContent === '1'`, chromedp.WithPollingTimeout(10*time.Second)),
		chromedp.WaitNotVisible(chromedp.CSS(`#hall`)),
	)
	if s := waiting.text("#queue-status"); !strings.Contains(s, "number 1") {
		t.Errorf("the waiting tab says %q", s)
	}
	// The waiting tab's seat held by the admitted one is still not for it to take: a hold
	// without a pass would be NOT_ADMITTED (internal/app/queue_test.go); here it has no seat map.
	dir := t.TempDir()
	for _, b := range tabs {
		path := filepath.Join(dir, strings.ReplaceAll(b.name, "'s tab", "")+".png")
		b.screenshot(path)
		t.Logf("screenshot of %s: %s", b.name, path)
		b.assertOffline(a.srv.URL)
	}
	if png, err := os.ReadFile(shot); err == nil {
		_ = os.WriteFile(filepath.Join(os.TempDir(), "seatflow-demo-queue.png"), png, 0o644)
	}
}
