package testenv

import (
	"sync"
	"time"

	"seatflow"
)

// Clock is an injected clock that tests move by hand (services take its Now), so expiry,
// grace periods and TTLs are tested without sleeping.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// A Clock is the root package's clock, so a service takes it, or its Now, as its clock.
var _ seatflow.Clock = (*Clock)(nil)

// NewClock returns a clock stopped at t.
func NewClock(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.now = c.now.Add(d) }
