// Package nodeid makes the ids the API gives its objects: opaque and globally unique, as
// Relay's object identification asks, so that normalised client caches (Apollo, urql,
// Relay) never take a showtime for a movie. An id is the base64url (unpadded) of
// "Type:databaseId", or "Type:id:id" for an object named by two (a seat's state in one
// showtime). Only the API speaks these ids (and an error's extensions, which reach the
// client as they are); MySQL, Redis and every service inside keep the database ids.
package nodeid

import (
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
)

// Types of the objects that have ids. The first seven and WaitingListEntry are the
// schema's Node types.
const (
	Cinema    = "Cinema"
	Movie     = "Movie"
	Hall      = "Hall"
	Seat      = "Seat"
	Showtime  = "Showtime"
	Order     = "Order"
	Ticket    = "Ticket"
	SeatMap   = "SeatMap"
	SeatState = "SeatState"
	// QueueTicket is an entrant's ticket in a showtime's on-sale queue, "QueueTicket:
	// showtime:number" with a random number (it tells nothing of when its holder joined);
	// the draw orders tickets by a keyed hash of this id (seatflow.DrawKey).
	QueueTicket = "QueueTicket"
	// WaitingListEntry is a customer's place on a showtime's waiting list.
	WaitingListEntry = "WaitingListEntry"
)

// IsNode reports whether objects of type typ can be fetched with node(id:).
func IsNode(typ string) bool {
	switch typ {
	case Cinema, Movie, Hall, Seat, Showtime, Order, Ticket, WaitingListEntry:
		return true
	}
	return false
}

var enc = base64.RawURLEncoding

// maxLen bounds what Decode reads: a type name and two 19-digit ids fit in 64 characters.
const maxLen = 96

// ErrMalformed is the error of an id that is not one of ours.
var ErrMalformed = errors.New("not a valid id")

// Encode returns the id of the object of type typ with database ids parts.
func Encode(typ string, parts ...int) string { return string(Append(nil, typ, parts...)) }

// Append appends Encode(typ, parts...) to b.
func Append(b []byte, typ string, parts ...int) []byte {
	var raw [64]byte
	plain := append(raw[:0], typ...)
	for _, p := range parts {
		plain = append(plain, ':')
		plain = strconv.AppendInt(plain, int64(p), 10)
	}
	return enc.AppendEncode(b, plain)
}

// Decode reads an id: its type and database ids (each positive). Padding and the standard
// base64 alphabet are accepted too.
func Decode(id string) (typ string, parts []int, err error) {
	if len(id) == 0 || len(id) > maxLen {
		return "", nil, ErrMalformed
	}
	id = strings.TrimRight(id, "=")
	id = strings.NewReplacer("+", "-", "/", "_").Replace(id)
	plain, err := enc.DecodeString(id)
	if err != nil {
		return "", nil, ErrMalformed
	}
	fields := strings.Split(string(plain), ":")
	if len(fields) < 2 || fields[0] == "" {
		return "", nil, ErrMalformed
	}
	for _, f := range fields[1:] {
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 || strconv.Itoa(n) != f {
			return "", nil, ErrMalformed
		}
		parts = append(parts, n)
	}
	return fields[0], parts, nil
}
