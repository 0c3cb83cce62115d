// Package googlewallet makes "Save to Google Wallet" links: a JWT signed (RS256) with a
// Google Cloud service account's key holding an EventTicketClass per showtime and the
// ticket's EventTicketObject, whose barcode is the ticket's code, the one the door checks
// (docs/TICKETS.md "Wallets").
package googlewallet

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"seatflow"
)

// SaveURL is where a link sends its JWT: Google's "Save to Google Wallet" page.
const SaveURL = "https://pay.google.com/gp/v/save/"

// Issuer signs the links of one Google Wallet issuer account.
type Issuer struct {
	Account *Account
	// IssuerID is the issuer account's id in the Google Pay & Wallet Console (digits).
	IssuerID string
	// Origin is the public URL of the site that shows the links (the JWT's origins).
	Origin string
	Now    func() time.Time
}

// Ticket is what a ticket's link shows: the ticket, its showtime, movie, cinema, hall and
// seat, and its code.
type Ticket struct {
	Ticket   *seatflow.Ticket
	Showtime *seatflow.Showtime
	Movie    *seatflow.Movie
	Cinema   *seatflow.Cinema
	Hall     *seatflow.Hall
	Seat     *seatflow.Seat
	Code     string
}

// Link is ticket t's "Save to Google Wallet" link.
func (i *Issuer) Link(t *Ticket) (string, error) {
	if i == nil || i.Account == nil || i.IssuerID == "" {
		return "", errors.New("google wallet: no issuer")
	}
	now := time.Now
	if i.Now != nil {
		now = i.Now
	}
	claims := jwt.MapClaims{
		"iss":     i.Account.Email,
		"aud":     "google",
		"typ":     "savetowallet",
		"iat":     now().Unix(),
		"origins": []string{i.Origin},
		"payload": Payload{
			EventTicketClasses: []EventTicketClass{i.class(t)},
			EventTicketObjects: []EventTicketObject{i.object(t)},
		},
	}
	signed, err := jwt.NewWithClaims(jwt.SigningMethodRS256, claims).SignedString(i.Account.Key)
	if err != nil {
		return "", err
	}
	return SaveURL + signed, nil
}

// ClassID is the id of showtime showID's class: one class per showtime.
func (i *Issuer) ClassID(showID int) string {
	return i.IssuerID + ".showtime-" + strconv.Itoa(showID)
}

// ObjectID is the id of ticket ticketID's object.
func (i *Issuer) ObjectID(ticketID int) string {
	return i.IssuerID + ".ticket-" + strconv.Itoa(ticketID)
}

func (i *Issuer) class(t *Ticket) EventTicketClass {
	loc := t.Cinema.Location()
	venue := t.Cinema.Name
	if t.Hall != nil && t.Hall.Name != "" {
		venue += ", " + t.Hall.Name
	}
	return EventTicketClass{
		ID:         i.ClassID(t.Showtime.ID),
		EventID:    i.ClassID(t.Showtime.ID),
		IssuerName: t.Cinema.Name,
		EventName:  localized(t.Movie.Title),
		Venue:      &Venue{Name: localized(venue), Address: localized(t.Cinema.Address)},
		DateTime: &DateTime{
			DoorsOpen: t.Showtime.StartsAt.Add(-doorsBefore).In(loc).Format(time.RFC3339),
			Start:     t.Showtime.StartsAt.In(loc).Format(time.RFC3339),
			End:       t.Showtime.EndsAt.In(loc).Format(time.RFC3339),
		},
		ReviewStatus: "UNDER_REVIEW",
	}
}

// doorsBefore is how long before a showtime its doors open, as its class shows it.
const doorsBefore = 30 * time.Minute

func (i *Issuer) object(t *Ticket) EventTicketObject {
	notBefore, expires := seatflow.TicketWindow(t.Showtime)
	return EventTicketObject{
		ID:         i.ObjectID(t.Ticket.ID),
		ClassID:    i.ClassID(t.Showtime.ID),
		State:      "ACTIVE",
		SeatInfo:   &SeatInfo{Seat: localized(strconv.Itoa(t.Seat.Number)), Row: localized(t.Seat.Row)},
		TicketType: localized(strings.ToLower(string(t.Ticket.TicketType))),
		Barcode:    Barcode{Type: "QR_CODE", Value: t.Code},
		ValidTimeInterval: &TimeInterval{
			Start: DateTimeValue{Date: notBefore.UTC().Format(time.RFC3339)},
			End:   DateTimeValue{Date: expires.UTC().Format(time.RFC3339)},
		},
	}
}
