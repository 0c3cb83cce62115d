// Package passkit is the PassKit web service: the endpoints Apple devices call to keep a
// ticket's Wallet pass up to date (under /passkit/v1: register and unregister a device
// for a pass, list the serial numbers of its passes updated since a tag, get a pass's
// latest version, log), authenticated by the pass's authenticationToken; the devices'
// registrations in MySQL (pass_registrations); and the push loop that tells a registered
// device through APNs (Pusher) when its pass changed. A pass's content is package wallet's
// (Passes); its authentication token and its update time are derived, never stored
// (rules.go). It never changes a ticket or a showtime.
package passkit

import (
	"context"
	"log/slog"
	"time"

	"seatflow/ent"
	"seatflow/internal/wallet"
)

// PassInfo is what the web service needs to know of a pass it serves (package wallet's).
type PassInfo = wallet.PassInfo

// Passes makes a ticket's latest pass: the .pkpass file and what it holds (wallet.Service).
type Passes interface {
	Pass(ctx context.Context, ticketID int) ([]byte, *PassInfo, error)
}

// Config is the web service's configuration.
type Config struct {
	// PassTypeID is the passes' pass type identifier: the only one served, and the APNs
	// topic of their pushes.
	PassTypeID string
	// Key derives the passes' authentication tokens (AuthenticationToken).
	Key []byte
	// PushLease is how long an instance's claim of a push holds: a push not marked done
	// by then (the instance stopped, APNs failed) is tried again.
	PushLease time.Duration
	Now       func() time.Time
	Log       *slog.Logger
}

// Service is the PassKit web service over the registrations in DB.
type Service struct {
	DB *ent.Client
	// Passes makes the passes served; nil: GET .../passes/... answers 503.
	Passes Passes
	Pusher Pusher
	Config

	logs logWindow
}

// New is a service with cfg's zero values defaulted.
func New(db *ent.Client, passes Passes, pusher Pusher, cfg Config) *Service {
	if cfg.PushLease <= 0 {
		cfg.PushLease = time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Service{DB: db, Passes: passes, Pusher: pusher, Config: cfg}
}
