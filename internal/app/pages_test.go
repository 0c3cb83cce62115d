package app

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// consoleLog keeps what a tab reports as an error: console errors, uncaught exceptions,
// log entries (a failed resource load is one) and HTTP answers of 400 or more.
type consoleLog struct {
	mu     sync.Mutex
	errors []string
}

func (c *consoleLog) listen(ev any) {
	var e string
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError {
			args := make([]string, len(ev.Args))
			for i, a := range ev.Args {
				args[i] = string(a.Value)
			}
			e = "console.error " + strings.Join(args, " ")
		}
	case *runtime.EventExceptionThrown:
		e = "exception " + ev.ExceptionDetails.Text
	case *cdplog.EventEntryAdded:
		if ev.Entry.Level == cdplog.EntryLevelError {
			e = "log " + ev.Entry.Text + " " + ev.Entry.URL
		}
	case *network.EventResponseReceived:
		if ev.Response.Status >= 400 {
			e = fmt.Sprintf("HTTP %d %s", ev.Response.Status, ev.Response.URL)
		}
	}
	if e != "" {
		c.mu.Lock()
		c.errors = append(c.errors, e)
		c.mu.Unlock()
	}
}

func (c *consoleLog) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.errors...)
}

// watchConsole records b's errors from now on.
func (b *tab) watchConsole() *consoleLog {
	c := &consoleLog{}
	chromedp.Listen(b.ctx, c.listen)
	return c
}

// eval evaluates expr in b's page into a value of type T.
func eval[T any](b *tab, expr string, opts ...chromedp.EvaluateOption) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserWait)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, opts...))
	if err != nil {
		b.t.Fatalf("%s: %s: %v", b.name, expr, err)
	}
	return v
}

// keepScreenshot writes b's page to name in the temporary directory, to look at.
func (b *tab) keepScreenshot(name string) {
	path := filepath.Join(os.TempDir(), name)
	b.screenshot(path)
	b.t.Logf("screenshot: %s", path)
}

// rect is a DOMRect's box.
type rect struct{ Left, Top, Right, Bottom float64 }

func (r rect) overlaps(o rect) bool {
	return r.Left < o.Right && o.Left < r.Right && r.Top < o.Bottom && o.Top < r.Bottom
}

func rectOf(b *tab, selector string) rect {
	b.t.Helper()
	return eval[rect](b, fmt.Sprintf(`(() => { const r = document.querySelector(%q).getBoundingClientRect();
		return {Left: r.left, Top: r.top, Right: r.right, Bottom: r.bottom}; })()`, selector))
}

// TestPlaygroundFirstLoad opens the playground as a newcomer does, on the demo data of
// embedded mode: no console error (the site's icon included), the sample subscription
// the default query suggests runs and shows a SNAPSHOT, and the demo link covers none of
// GraphiQL (the response pane included), on a laptop's window and on a small one.
func TestPlaygroundFirstLoad(t *testing.T) {
	browser := newBrowser(t)
	a := newTestApp(t)
	if _, err := a.Seeder().Seed(context.Background()); err != nil {
		t.Fatal(err)
	}
	p := openTab(t, browser, "playground")
	console := p.watchConsole()
	p.do("open the playground",
		chromedp.Navigate(a.srv.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS(`.graphiql-container .graphiql-execute-button`)),
		chromedp.WaitVisible(chromedp.CSS(`#seatflow-demo-link`)),
	)
	editor := `document.querySelector('.graphiql-query-editor .CodeMirror').CodeMirror`
	sample := regexp.MustCompile(`#\s+(subscription \{.*\})`).FindStringSubmatch(eval[string](p, editor+`.getValue()`))
	if sample == nil {
		t.Fatalf("the default query suggests no subscription:\n%s", eval[string](p, editor+`.getValue()`))
	}
	for _, size := range [][2]int64{{1280, 800}, {900, 600}} {
		p.do(fmt.Sprint("resize to ", size), chromedp.EmulateViewport(size[0], size[1]))
		link, graphiql := rectOf(p, `#seatflow-demo-link`), rectOf(p, `#graphiql`)
		if link.overlaps(graphiql) {
			t.Errorf("at %dx%d the demo link %+v covers GraphiQL %+v", size[0], size[1], link, graphiql)
		}
		if link.Bottom > float64(size[1]) || link.Right > float64(size[0]) {
			t.Errorf("at %dx%d the demo link %+v is outside the window", size[0], size[1], link)
		}
	}
	eval[bool](p, fmt.Sprintf(`(%s.setValue(%q), true)`, editor, sample[1]))
	p.do("run the sample subscription", chromedp.Click(chromedp.CSS(`.graphiql-execute-button`)))
	p.waitResult(`"kind": "SNAPSHOT"`)
	if response, link := rectOf(p, `.graphiql-response`), rectOf(p, `#seatflow-demo-link`); response.overlaps(link) {
		t.Errorf("the demo link %+v covers the response pane %+v", link, response)
	}
	p.keepScreenshot("seatflow-playground.png")
	icon := eval[int](p, `fetch('/favicon.ico').then(r => r.headers.get('content-type') === 'image/x-icon' ? r.status : -1)`, chromedp.EvalAwaitPromise)
	if icon != 200 {
		t.Errorf("GET /favicon.ico from the page: %d, want 200 with image/x-icon", icon)
	}
	time.Sleep(200 * time.Millisecond) // late events (a failed icon load) reach the listener
	if errs := console.list(); len(errs) > 0 {
		t.Errorf("the playground logged errors: %q", errs)
	}
	p.assertOffline(a.srv.URL)
}

// layoutProblems lists, for the /demo page as drawn, whatever a visitor cannot see or
// reach: a page wider than the window, an element sticking out of its panel, a seat or
// row label of the hall that its scroll box cannot bring into view (one left of the
// scrollable area is lost for good: scrolling starts at 0).
const layoutProblems = `(() => {
  const out = [];
  const vw = document.documentElement.clientWidth;
  if (document.documentElement.scrollWidth > vw) out.push('page scrollWidth ' + document.documentElement.scrollWidth + ' > window ' + vw);
  const grid = document.getElementById('seat-grid');
  for (const panel of document.querySelectorAll('.panel')) {
    if (panel.hidden || panel.offsetParent === null) continue;
    const p = panel.getBoundingClientRect();
    if (p.left < -0.5 || p.right > vw + 0.5) out.push('panel #' + panel.id + ' [' + p.left + ', ' + p.right + '] outside the window');
    for (const el of panel.querySelectorAll('*')) {
      if (grid.contains(el) || el.offsetParent === null || el.classList.contains('visually-hidden')) continue;
      const r = el.getBoundingClientRect();
      if (r.width === 0) continue;
      if (r.left < p.left - 0.5 || r.right > p.right + 0.5) out.push((el.id ? '#' + el.id : el.tagName + '.' + el.className) + ' [' + r.left + ', ' + r.right + '] outside panel #' + panel.id + ' [' + p.left + ', ' + p.right + ']');
    }
  }
  const hall = document.getElementById('hall');
  const box = hall.getBoundingClientRect();
  const cells = [...grid.querySelectorAll('.seat[data-seat-id], .row-label')];
  if (cells.length === 0) out.push('no seats drawn');
  for (const el of cells) {
    const r = el.getBoundingClientRect();
    const left = r.left - box.left - hall.clientLeft + hall.scrollLeft; // in the scrollable area
    if (left < 0 || left + r.width > hall.scrollWidth + 0.5) out.push((el.dataset.row || '') + (el.dataset.number || el.textContent) + ' at ' + left + ' outside the scrollable area [0, ' + hall.scrollWidth + ']');
    el.scrollIntoView({block: 'nearest', inline: 'nearest'});
    const s = el.getBoundingClientRect(), b = hall.getBoundingClientRect();
    if (s.left < b.left - 0.5 || s.right > b.right + 0.5 || s.left < -0.5 || s.right > vw + 0.5) out.push((el.dataset.row || '') + (el.dataset.number || el.textContent) + ' cannot be scrolled into view: [' + s.left + ', ' + s.right + '] in [' + b.left + ', ' + b.right + ']');
  }
  hall.scrollLeft = 0;
  return out;
})()`

// TestDemoLayoutPhoneAndDesktop draws /demo with the demo data's big hall (14 seats a row)
// on a phone (390 px) and a desktop (1400 px): nothing sticks out of the window or of its
// panel, and every seat and row label can be scrolled into view, the first row's label
// and seat 1 included (a centred grid in a scroll box cut them off on the left).
func TestDemoLayoutPhoneAndDesktop(t *testing.T) {
	browser := newBrowser(t)
	a := newTestApp(t)
	if _, err := a.Seeder().Seed(context.Background()); err != nil {
		t.Fatal(err)
	}
	var first struct {
		Showtime struct {
			StartsAt string
			Hall     struct{ Name string }
		}
	}
	const show = "U2hvd3RpbWU6MQ" // showtime 1 of the demo data: Hall 1
	a.must("", `query($id: ID!) { showtime(id: $id) { startsAt hall { name } } }`, map[string]any{"id": show}, &first)
	starts, err := time.Parse(time.RFC3339, first.Showtime.StartsAt)
	if err != nil || first.Showtime.Hall.Name != "Hall 1" {
		t.Fatalf("showtime 1: %+v, %v", first, err)
	}
	for _, w := range []struct {
		name          string
		width, height int64
		mobile        bool
	}{{"phone", 390, 844, true}, {"desktop", 1400, 1000, false}} {
		t.Run(w.name, func(t *testing.T) {
			d := openTab(t, browser, "demo "+w.name)
			console := d.watchConsole()
			opts := []chromedp.EmulateViewportOption{}
			if w.mobile {
				opts = append(opts, chromedp.EmulateMobile, chromedp.EmulateScale(3))
			}
			d.do("set the window", chromedp.EmulateViewport(w.width, w.height, opts...))
			d.open(a.srv.URL, starts.Format("2006-01-02"), show, a.token("demo-"+w.name, "customer"))
			d.do("seat map drawn", chromedp.WaitVisible(chromedp.CSS(`.seat[data-seat-id][data-status="available"]`)))
			if n := eval[int](d, `document.querySelectorAll('.seat[data-seat-id]').length`); n != 150 {
				t.Fatalf("%d seats drawn, want Hall 1's 150", n)
			}
			d.keepScreenshot("seatflow-demo-" + w.name + ".png")
			if problems := eval[[]string](d, layoutProblems); len(problems) > 0 {
				raw, _ := json.MarshalIndent(problems, "", " ")
				t.Errorf("at %d px: %s", w.width, raw)
			}
			// Row A's label and seat 1 are reachable and shown in order.
			label, seat1 := rectOf(d, `#seat-grid .row-label`), rectOf(d, `.seat[data-row="A"][data-number="1"]`)
			if label.Right > seat1.Left+0.5 {
				t.Errorf("row A's label %+v is not left of seat A1 %+v", label, seat1)
			}
			if errs := console.list(); len(errs) > 0 {
				t.Errorf("the demo page logged errors: %q", errs)
			}
		})
	}
}
