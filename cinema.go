package seatflow

import (
	"fmt"
	"sync"
	"time"
)

// The longest name and address of a cinema, in characters (as their columns count).
const (
	MaxCinemaName    = 100
	MaxCinemaAddress = 300
)

// DefaultCinemaName names the cinema the migration makes for the halls that belong to no
// cinema (a database from before cinemas existed): its time zone is SEATFLOW_TIMEZONE.
const DefaultCinemaName = "SeatFlow"

// Cinema is one cinema of a chain: a Date of its showtimes is a day in its time zone (an
// IANA name such as Europe/Paris).
type Cinema struct {
	ID       int    `json:"id"`
	Name     string `json:"name"`
	TimeZone string `json:"timeZone"`
	Address  string `json:"address"`
}

// LocalDateTime is the layout of a local date-time in a cinema's zone (ISO 8601, no offset).
const LocalDateTime = "2006-01-02T15:04:05"

var zones sync.Map // IANA name → *time.Location

// Zone returns the time zone named name: an IANA name only ("Local", which depends on the
// server's machine, and "" are refused). Zones are loaded once per process.
func Zone(name string) (*time.Location, error) {
	if loc, ok := zones.Load(name); ok {
		return loc.(*time.Location), nil
	}
	if name == "" || name == "Local" {
		return nil, fmt.Errorf("time zone %q is not an IANA name", name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("time zone %q is not an IANA name", name)
	}
	zones.Store(name, loc)
	return loc, nil
}

// Location is the cinema's time zone (UTC when its name does not load, which the
// database's validation never lets in).
func (c *Cinema) Location() *time.Location {
	loc, err := Zone(c.TimeZone)
	if err != nil {
		return time.UTC
	}
	return loc
}

// DayOf is the day (YYYY-MM-DD) of instant t in the cinema's time zone.
func (c *Cinema) DayOf(t time.Time) string { return t.In(c.Location()).Format(time.DateOnly) }

// LocalTime is instant t as a local date-time in the cinema's time zone (LocalDateTime).
func (c *Cinema) LocalTime(t time.Time) string { return t.In(c.Location()).Format(LocalDateTime) }
