package seatflow

import "time"

// Clock tells the time to the rules that depend on it (expiries, grace periods, pass
// lifetimes, the queue's pushes): the system clock in the server, a clock moved by hand in
// the tests (internal/tooling/testenv.Clock), so those rules are tested without sleeping.
//
// It is this one-method interface rather than a clock library: the rules read the time and
// compare it, and none of them waits on a clock. What waits keeps the real time: the
// queue's feed is woken by tickers and pushes a waiting customer's ticket at least every
// Refresh of real time (internal/queue/feed.go: a test's stopped clock must not stop the
// pushes a browser waits for); internal/wstransport schedules keep-alives, pings and the
// connection_init deadline on its registry's ticker and socket deadlines, which the kernel
// and the net package measure against the real time, and reads its Config.Now only for
// tokens' expiry; internal/live's flush tick, heartbeat and watchdog run on timers and
// tickers. Durations measured only for metrics and logs use time.Since. A library
// with fake timers (jonboulle/clockwork; benbjohnson/clock is no longer maintained) would
// add a dependency for timers that no test moves.
type Clock interface {
	Now() time.Time
}

// ClockFunc is a Clock of a function, the form the services' Now options take (a
// Clock's method value, such as testenv.Clock's Now, or app.OpenWithClock's function).
// The nil ClockFunc is the system clock: the one place that rule is written.
type ClockFunc func() time.Time

// Now is f's time, or the system clock's when f is nil.
func (f ClockFunc) Now() time.Time {
	if f == nil {
		return time.Now()
	}
	return f()
}

// SystemClock is the real time.
var SystemClock Clock = ClockFunc(time.Now)
