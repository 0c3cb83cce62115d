package app

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// responseText is what GraphiQL's result panel shows.
const responseText = `(() => { const cm = document.querySelector('.graphiql-response .CodeMirror');
	return cm ? cm.CodeMirror.getValue() : ''; })()`

// playground opens GraphiQL at / with query in its editor, runs it and waits until the
// result panel contains want.
func (b *tab) playground(base, query, want string) {
	b.t.Helper()
	b.do("open the playground and run "+query,
		chromedp.Navigate(base+"/?query="+url.QueryEscape(query)),
		chromedp.WaitVisible(chromedp.CSS(`.graphiql-container .graphiql-execute-button`)),
		chromedp.WaitVisible(chromedp.CSS(`#seatflow-demo-link`)),
		chromedp.Click(chromedp.CSS(`.graphiql-execute-button`)),
	)
	b.waitResult(want)
}

// waitResult waits until GraphiQL's result panel contains want.
func (b *tab) waitResult(want string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserWait)
	defer cancel()
	got, err := chromedp.Run(ctx, chromedp.Poll[string](fmt.Sprintf(`(() => { const t = %s; return t.includes(%q) ? t : null; })()`,
		responseText, want), chromedp.WithPollingInterval(50*time.Millisecond)))
	if err != nil {
		ctx, cancel := context.WithTimeout(b.ctx, 3*time.Second)
		defer cancel()
		shown, _ := chromedp.Run(ctx, chromedp.Evaluate[string](responseText))
		b.t.Fatalf("%s: the result panel does not show %q (%v); it shows: %.500s", b.name, want, err, shown)
	}
	return got
}

// TestPlaygroundOffline loads the GraphiQL playground in Chromium with every host but
// 127.0.0.1 unresolvable, runs a query and a seatMap subscription, and checks what the
// result panel shows: the playground's files come from the binary, subscriptions run over
// graphql-ws, and the page keeps its Content-Security-Policy.
func TestPlaygroundOffline(t *testing.T) {
	browser := newBrowser(t)
	a := newTestApp(t)
	show, seat := demoShowtime(a)
	check := openTab(t, browser, "offline check")
	p := openTab(t, check.ctx, "playground") // a second tab of the same browser

	// The browser really is offline: a CDN does not answer.
	ctx, cancel := context.WithTimeout(check.ctx, browserWait)
	fetched, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`fetch('https://cdn.jsdelivr.net/npm/graphiql@4.1.2/graphiql.min.js',
		{mode: 'no-cors'}).then(() => true, () => false)`, chromedp.EvalAwaitPromise))
	cancel()
	if err != nil || fetched {
		t.Fatalf("a CDN answered the offline browser (%v, %v): the test would prove nothing", fetched, err)
	}

	p.playground(a.srv.URL, fmt.Sprintf(`{ showtime(id: "%s") { status movie { title } hall { name } } }`, show), `"title": "Dune"`)

	p.playground(a.srv.URL, fmt.Sprintf(`subscription { seatMap(showtimeId: "%s") { kind version seats { seat { row number } status } } }`, show),
		`"kind": "SNAPSHOT"`)
	// A hold elsewhere arrives as a DELTA in the open subscription.
	a.hold(a.token("someone", "customer"), show, []string{seat["C3"]}, "playground-test")
	got := p.waitResult(`"kind": "DELTA"`)
	if compact := strings.Join(strings.Fields(got), ""); !strings.Contains(compact, `{"seat":{"row":"C","number":3},"status":"HELD"}`) {
		t.Errorf("the DELTA after holding C3: %s", got)
	}
	// GraphiQL's dialogs work under the page's Content-Security-Policy (they inject styles).
	p.do("open the settings dialog", chromedp.Click(chromedp.CSS(`button[aria-label="Open settings dialog"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.graphiql-dialog`)))
	p.do("close it", chromedp.KeyEvent(kb.Escape), chromedp.WaitNotPresent(chromedp.CSS(`.graphiql-dialog`)))
	// The docs come from the full introspection query GraphiQL sends.
	p.do("the documentation explorer lists Query.showtimes",
		chromedp.Click(chromedp.CSS(`button[aria-label="Show Documentation Explorer"]`)),
		chromedp.Click(chromedp.Search(`//a[@class="graphiql-doc-explorer-type-name" and text()="Query"]`)),
		chromedp.WaitVisible(chromedp.Search(`//a[contains(@class, "graphiql-doc-explorer-field-name") and text()="showtimes"]`)))
	p.assertOffline(a.srv.URL)
}

// TestDemoPageOffline: the /demo page loads, signs in and goes live with every host but
// 127.0.0.1 unresolvable, asking only the server for anything.
func TestDemoPageOffline(t *testing.T) {
	browser := newBrowser(t)
	a := newTestApp(t)
	show, _ := demoShowtime(a)
	d := openTab(t, browser, "demo")
	d.open(a.srv.URL, testNow.Add(30*time.Hour).Format("2006-01-02"), show, a.token("demo-alice", "customer"))
	d.do("seat map drawn", chromedp.WaitVisible(chromedp.CSS(`.seat[data-seat-id][data-status="available"]`)))
	d.assertOffline(a.srv.URL)
}
