// Package wallet makes Apple Wallet passes of tickets: an eventTicket pass whose barcode is
// the ticket's code (the JWS the door checks), packaged as a signed .pkpass, and served at
// GET /tickets/{ticketId}/pass.pkpass to the ticket's owner or to a signed link. It reads
// tickets and the catalog and changes nothing.
package wallet

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"seatflow"
	"seatflow/internal/catalog"
	"seatflow/internal/tickets"
)

// Service makes the passes of tickets. Without a Signer Apple passes are off: every call
// answers WALLET_UNAVAILABLE.
type Service struct {
	Tickets *tickets.Service
	Catalog *catalog.Service
	Signer  *Signer
	Identity
	// LinkKey signs the download links (auth.DeriveKey(secret, "wallet-link")).
	LinkKey []byte
	Now     seatflow.ClockFunc
}

// PassInfo is what the PassKit web service needs of a pass besides its bytes.
type PassInfo struct {
	SerialNumber        string
	PassTypeID          string
	AuthenticationToken string
	LastUpdated         time.Time
}

// LinkTTL is how long a signed download link stays good.
const LinkTTL = 24 * time.Hour

// Enabled reports whether the instance makes Apple passes.
func (s *Service) Enabled() bool { return s != nil && s.Signer != nil }

func unavailable() error {
	return seatflow.Errorf(seatflow.EWALLETUNAVAILABLE, "Apple Wallet passes are not configured on this server (SEATFLOW_WALLET_APPLE_*)")
}

// Pass returns the .pkpass of ticket ticketID (a database id) and what describes it; a
// revoked ticket's pass is voided. NOT_FOUND when there is no such ticket.
func (s *Service) Pass(ctx context.Context, ticketID int) ([]byte, *PassInfo, error) {
	if !s.Enabled() {
		return nil, nil, unavailable()
	}
	t, err := s.Tickets.Ticket(ctx, ticketID)
	if err != nil {
		return nil, nil, err
	} else if t == nil {
		return nil, nil, seatflow.Errorf(seatflow.ENOTFOUND, "ticket %s does not exist", SerialNumber(ticketID))
	}
	return s.pass(ctx, t)
}

// pass builds ticket t's pass from the catalog as MySQL has it now.
func (s *Service) pass(ctx context.Context, t *seatflow.Ticket) ([]byte, *PassInfo, error) {
	st, err := s.Catalog.FreshShowtime(ctx, t.ShowtimeID)
	if err != nil {
		return nil, nil, err
	}
	movie, err := s.Catalog.Movie(ctx, st.MovieID)
	if err != nil {
		return nil, nil, err
	}
	cinema, err := s.Catalog.Cinema(ctx, st.CinemaID)
	if err != nil {
		return nil, nil, err
	}
	hall, err := s.Catalog.Hall(ctx, st.HallID)
	if err != nil {
		return nil, nil, err
	}
	seats := seatflow.SeatsByID(hall.Seats, []int{t.SeatID})
	if len(seats) != 1 {
		return nil, nil, fmt.Errorf("seat %d of ticket %d is not in hall %d", t.SeatID, t.ID, hall.ID)
	}
	code, err := s.Tickets.Code(ctx, t, st)
	if err != nil {
		return nil, nil, err
	}
	p := NewPass(s.Identity, Ticketed{Ticket: t, Showtime: st, Movie: movie, Cinema: cinema, Hall: hall, Seat: &seats[0], Code: code})
	updated := LastUpdated(st, t)
	b, err := Package(p, s.Signer, updated)
	if err != nil {
		return nil, nil, err
	}
	return b, &PassInfo{SerialNumber: p.SerialNumber, PassTypeID: p.PassTypeIdentifier,
		AuthenticationToken: p.AuthenticationToken, LastUpdated: updated}, nil
}

// AuthenticationToken is the pass's authenticationToken, derived rather than stored: the
// hex HMAC-SHA256 of its serial number with key (auth.DeriveKey(secret, "wallet-pass")),
// 64 characters (Apple asks for 16 or more).
func AuthenticationToken(key []byte, serial string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(serial))
	return hex.EncodeToString(m.Sum(nil))
}

// LastUpdated is when ticket t's pass last changed: the latest of its showtime's last change
// (a reschedule, a cancellation), the ticket's making and its revocation.
func LastUpdated(st *seatflow.Showtime, t *seatflow.Ticket) time.Time {
	return LastUpdatedAt(st.UpdatedAt, t.CreatedAt, t.RevokedAt)
}

// LastUpdatedAt is LastUpdated from the three times themselves (the PassKit web service
// reads them from its rows).
func LastUpdatedAt(showtimeUpdatedAt, ticketCreatedAt time.Time, ticketRevokedAt *time.Time) time.Time {
	last := ticketCreatedAt
	if showtimeUpdatedAt.After(last) {
		last = showtimeUpdatedAt
	}
	if ticketRevokedAt != nil && ticketRevokedAt.After(last) {
		last = *ticketRevokedAt
	}
	return last.UTC()
}

// PassPath is the route of a ticket's pass, by its serial number (the ticket's API id).
func PassPath(serial string) string { return "/tickets/" + serial + "/pass.pkpass" }

// Link is ticket ticketID's pass download link, good for LinkTTL: an absolute path with
// exp (Unix seconds) and sig (hex HMAC-SHA256 of the serial and exp with LinkKey), so a
// browser fetches the pass without a bearer token.
func (s *Service) Link(ticketID int) (string, error) {
	if !s.Enabled() {
		return "", unavailable()
	}
	serial := SerialNumber(ticketID)
	exp := strconv.FormatInt(s.Now.Now().Add(LinkTTL).Unix(), 10)
	return PassPath(serial) + "?exp=" + exp + "&sig=" + s.linkSig(serial, exp), nil
}

// linkSig signs a link's serial and expiry.
func (s *Service) linkSig(serial, exp string) string {
	m := hmac.New(sha256.New, s.LinkKey)
	m.Write([]byte(serial + "\n" + exp))
	return hex.EncodeToString(m.Sum(nil))
}

// validLink reports whether exp and sig are a link this instance signed for serial and
// exp has not passed.
func (s *Service) validLink(serial, exp, sig string) bool {
	n, err := strconv.ParseInt(exp, 10, 64)
	if err != nil || s.Now.Now().Unix() > n {
		return false
	}
	want := s.linkSig(serial, exp)
	return hmac.Equal([]byte(want), []byte(sig))
}
