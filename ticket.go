package seatflow

import "time"

// TicketStatus is where a ticket is: VALID until it is used at the door (CHECKED_IN) or
// taken back (REVOKED: its order was refunded or its showtime cancelled). A revoked ticket
// never becomes valid again.
type TicketStatus string

// Ticket statuses.
const (
	TicketValid     TicketStatus = "VALID"
	TicketCheckedIn TicketStatus = "CHECKED_IN"
	TicketRevoked   TicketStatus = "REVOKED"
)

// CheckInStatus is the door's answer to one scan of a ticket's code.
type CheckInStatus string

// Check-in answers. Only ADMITTED lets the holder in.
const (
	CheckInAdmitted         CheckInStatus = "ADMITTED"
	CheckInAlreadyCheckedIn CheckInStatus = "ALREADY_CHECKED_IN"
	CheckInRevoked          CheckInStatus = "REVOKED"
	CheckInWrongShowtime    CheckInStatus = "WRONG_SHOWTIME"
	CheckInNotYetValid      CheckInStatus = "NOT_YET_VALID"
	CheckInExpired          CheckInStatus = "EXPIRED"
	CheckInInvalid          CheckInStatus = "INVALID"
)

// TicketValidBefore is how long before its showtime starts a ticket opens the door (the
// code's nbf); it stays valid until the showtime ends (exp).
const TicketValidBefore = 3 * time.Hour

// TicketWindow is when a ticket of showtime st may be checked in: from TicketValidBefore
// before its start to its end.
func TicketWindow(st *Showtime) (notBefore, expires time.Time) {
	return st.StartsAt.Add(-TicketValidBefore), st.EndsAt
}

// MaxUploadScans is the most scans one upload of an offline scanner may carry.
const MaxUploadScans = 500

// MaxScanNonce is the longest nonce a scanner may give a scan (a UUID has 36 characters).
const MaxScanNonce = 64

// Ticket is the right of one person to one seat of one showtime: one per seat of a PAID
// order, made in the transaction that makes the order PAID.
type Ticket struct {
	ID         int `json:"id"`
	OrderID    int `json:"orderId"`
	ShowtimeID int `json:"showtimeId"`
	SeatID     int `json:"seatId"`
	// TicketType is the type of its order's line for the seat.
	TicketType TicketType `json:"ticketType"`
	// KeyID is the signing key of the ticket's code (fixed when the ticket is made).
	KeyID       int        `json:"-"`
	CreatedAt   time.Time  `json:"createdAt"`
	CheckedInAt *time.Time `json:"checkedInAt"`
	RevokedAt   *time.Time `json:"revokedAt"`
	// CheckInNonce is the nonce of the scan that admitted it (never shown).
	CheckInNonce string `json:"-"`
	// UserID is the customer whose order it belongs to (never shown to others).
	UserID string `json:"-"`
}

// Status is the ticket's status: REVOKED wins over CHECKED_IN (a refund after the door
// still takes the ticket back).
func (t *Ticket) Status() TicketStatus {
	switch {
	case t.RevokedAt != nil:
		return TicketRevoked
	case t.CheckedInAt != nil:
		return TicketCheckedIn
	}
	return TicketValid
}

// CheckInResult is the answer to one scan: its status, the ticket when the code named one
// of ours, and for ALREADY_CHECKED_IN (and a repeated ADMITTED) when it was first used.
type CheckInResult struct {
	Status           CheckInStatus `json:"status"`
	Ticket           *Ticket       `json:"ticket"`
	FirstCheckedInAt *time.Time    `json:"firstCheckedInAt"`
}

// OfflineScan is a scan an offline scanner made and uploads later: the code it read, when,
// and the nonce it gave the scan (the same scan uploaded twice counts once).
type OfflineScan struct {
	Code      string    `json:"code"`
	ScannedAt time.Time `json:"scannedAt"`
	Nonce     string    `json:"nonce"`
}

// RevokedTicket is an entry of a showtime's revocation list, for offline scanners.
type RevokedTicket struct {
	TicketID  int       `json:"ticketId"`
	RevokedAt time.Time `json:"revokedAt"`
}

// CheckInCount is a showtime's door: tickets sold (valid or checked in), those checked in,
// and the duplicate scans (someone let in on a ticket already used, which only offline
// scanners can do: each scan after the first of a ticket counts once).
type CheckInCount struct {
	ShowtimeID     int `json:"showtimeId"`
	CheckedIn      int `json:"checkedIn"`
	Sold           int `json:"sold"`
	DuplicateScans int `json:"duplicateScans"`
}

// TicketKey is a public key that verifies ticket codes, as a JSON Web Key (RFC 8037:
// kty OKP, crv Ed25519, x the public key in base64url).
type TicketKey struct {
	Kid string `json:"kid"`
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Use string `json:"use"`
	Alg string `json:"alg"`
	// CreatedAt is when the key was added; Signing says whether new tickets get it.
	CreatedAt time.Time `json:"-"`
	Signing   bool      `json:"-"`
}
