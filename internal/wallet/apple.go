package wallet

import (
	"fmt"
	"strconv"
	"time"

	"seatflow"
	"seatflow/internal/nodeid"
)

// Ticketed is everything a ticket's pass shows: the ticket, its showtime, movie, cinema,
// hall and seat, and the code the door checks.
type Ticketed struct {
	Ticket   *seatflow.Ticket
	Showtime *seatflow.Showtime
	Movie    *seatflow.Movie
	Cinema   *seatflow.Cinema
	Hall     *seatflow.Hall
	Seat     *seatflow.Seat
	// Code is the ticket's JWS (tickets.Service.Code), the pass's barcode.
	Code string
}

// Identity is what makes a pass the instance's: its pass type and team (the certificate's),
// the base of its web service, and the key of its authentication tokens.
type Identity struct {
	PassTypeID string
	TeamID     string
	// WebServiceURL is the PassKit web service's base (the public URL + "/passkit").
	WebServiceURL string
	// TokenKey is the key of AuthenticationToken (auth.DeriveKey(secret, "wallet-pass")).
	TokenKey []byte
}

// Pass is pass.json of an eventTicket pass, with the keys Apple's PassKit Package Format
// Reference documents.
type Pass struct {
	FormatVersion       int        `json:"formatVersion"`
	PassTypeIdentifier  string     `json:"passTypeIdentifier"`
	SerialNumber        string     `json:"serialNumber"`
	TeamIdentifier      string     `json:"teamIdentifier"`
	OrganizationName    string     `json:"organizationName"`
	Description         string     `json:"description"`
	AuthenticationToken string     `json:"authenticationToken"`
	WebServiceURL       string     `json:"webServiceURL"`
	RelevantDate        string     `json:"relevantDate"`
	ExpirationDate      string     `json:"expirationDate"`
	Voided              bool       `json:"voided,omitempty"`
	ForegroundColor     string     `json:"foregroundColor"`
	BackgroundColor     string     `json:"backgroundColor"`
	LabelColor          string     `json:"labelColor"`
	Barcodes            []Barcode  `json:"barcodes"`
	Barcode             Barcode    `json:"barcode"` // iOS 8 and older read only this one
	EventTicket         PassFields `json:"eventTicket"`
}

// Barcode is a pass's barcode: the ticket's code as a QR code.
type Barcode struct {
	Format          string `json:"format"`
	Message         string `json:"message"`
	MessageEncoding string `json:"messageEncoding"`
	AltText         string `json:"altText,omitempty"`
}

// PassFields are the fields of a pass's style (here eventTicket), by place on the pass.
type PassFields struct {
	HeaderFields    []Field `json:"headerFields,omitempty"`
	PrimaryFields   []Field `json:"primaryFields"`
	SecondaryFields []Field `json:"secondaryFields"`
	AuxiliaryFields []Field `json:"auxiliaryFields"`
	BackFields      []Field `json:"backFields"`
}

// Field is one field of a pass: a key unique in the pass, a label and a value.
type Field struct {
	Key   string `json:"key"`
	Label string `json:"label,omitempty"`
	Value string `json:"value"`
}

// Barcode formats and encodings of Apple's reference.
const (
	barcodeQR       = "PKBarcodeFormatQR"
	barcodeEncoding = "iso-8859-1"
)

// passTime is how a pass shows a moment: in the cinema's zone, named.
const passTime = "Mon 2 Jan 2006, 15:04"

// NewPass is the pass of a ticket. The times it shows are in the cinema's own zone; the
// doors' time is the showtime's start (SeatFlow has no separate door opening time).
func NewPass(id Identity, t Ticketed) *Pass {
	serial := SerialNumber(t.Ticket.ID)
	loc := t.Cinema.Location()
	start, end := t.Showtime.StartsAt.In(loc), t.Showtime.EndsAt.In(loc)
	zone := t.Cinema.TimeZone
	code := Barcode{Format: barcodeQR, Message: t.Code, MessageEncoding: barcodeEncoding, AltText: seatLabel(t.Seat)}
	p := &Pass{
		FormatVersion:       1,
		PassTypeIdentifier:  id.PassTypeID,
		SerialNumber:        serial,
		TeamIdentifier:      id.TeamID,
		OrganizationName:    t.Cinema.Name,
		Description:         fmt.Sprintf("Ticket for %s at %s", t.Movie.Title, t.Cinema.Name),
		AuthenticationToken: AuthenticationToken(id.TokenKey, serial),
		WebServiceURL:       id.WebServiceURL,
		RelevantDate:        start.Format(time.RFC3339),
		ExpirationDate:      end.Format(time.RFC3339),
		Voided:              t.Ticket.Status() == seatflow.TicketRevoked,
		ForegroundColor:     "rgb(255, 255, 255)",
		BackgroundColor:     "rgb(24, 24, 36)",
		LabelColor:          "rgb(190, 190, 210)",
		Barcodes:            []Barcode{code},
		Barcode:             code,
		EventTicket: PassFields{
			HeaderFields:    []Field{{Key: "starts", Label: "STARTS", Value: start.Format("2 Jan 15:04")}},
			PrimaryFields:   []Field{{Key: "movie", Label: "MOVIE", Value: t.Movie.Title}},
			SecondaryFields: []Field{{Key: "cinema", Label: "CINEMA", Value: t.Cinema.Name}, {Key: "hall", Label: "HALL", Value: t.Hall.Name}},
			AuxiliaryFields: []Field{{Key: "seat", Label: "SEAT", Value: seatLabel(t.Seat)},
				{Key: "ticketType", Label: "TICKET", Value: ticketTypeLabel(t.Ticket.TicketType)}},
			BackFields: []Field{
				{Key: "doors", Label: "Doors", Value: start.Format(passTime) + " (" + zone + ")"},
				{Key: "showtime", Label: "Showtime", Value: start.Format(passTime) + " – " + end.Format("15:04") + " (" + zone + ")"},
				{Key: "address", Label: "Cinema", Value: cinemaLine(t.Cinema)},
				{Key: "order", Label: "Order", Value: nodeid.Encode(nodeid.Order, t.Ticket.OrderID)},
				{Key: "ticket", Label: "Ticket", Value: serial},
				{Key: "terms", Label: "Entry", Value: "Show the QR code at the door: it admits one person once, from 3 hours before the start to the end of the showtime."},
			},
		},
	}
	if p.Voided {
		p.EventTicket.BackFields = append([]Field{{Key: "status", Label: "Status", Value: "This ticket was taken back (refund or cancellation): it no longer opens the door."}},
			p.EventTicket.BackFields...)
	}
	return p
}

// SerialNumber is a ticket's pass's serial number: the ticket's API id.
func SerialNumber(ticketID int) string { return nodeid.Encode(nodeid.Ticket, ticketID) }

// seatLabel names a seat as the hall's signs do: "Row B, seat 5".
func seatLabel(s *seatflow.Seat) string {
	return "Row " + s.Row + ", seat " + strconv.Itoa(s.Number)
}

// ticketTypeLabel is a ticket type in words.
func ticketTypeLabel(t seatflow.TicketType) string {
	switch t {
	case seatflow.TicketAdult:
		return "Adult"
	case seatflow.TicketChild:
		return "Child"
	case seatflow.TicketSenior:
		return "Senior"
	case seatflow.TicketStudent:
		return "Student"
	}
	return string(t)
}

// cinemaLine is a cinema's name and, when it has one, its address.
func cinemaLine(c *seatflow.Cinema) string {
	if c.Address == "" {
		return c.Name
	}
	return c.Name + ", " + c.Address
}
