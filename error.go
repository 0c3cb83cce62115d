// Package seatflow is SeatFlow's domain: the types every layer shares (movies, halls and
// their seats, showtimes, orders, seat maps, with their typed statuses and the changes a
// status may make) and the one application error type with its codes. It imports nothing
// of the project: storage (ent), transport (GraphQL) and services depend on it, never the
// other way round.
package seatflow

import (
	"errors"
	"fmt"
)

// Error codes, sent to clients as extensions.code (docs/DESIGN.md "Error codes").
const (
	EUNAUTHENTICATED  = "UNAUTHENTICATED"
	EFORBIDDEN        = "FORBIDDEN"
	ENOTFOUND         = "NOT_FOUND"
	EINVALID          = "BAD_USER_INPUT"
	ESEATSUNAVAILABLE = "SEATS_UNAVAILABLE"
	ESEATGAP          = "SEAT_GAP"
	ELIMIT            = "PURCHASE_LIMIT_EXCEEDED"
	EINPROGRESS       = "IN_PROGRESS"
	ENOTONSALE        = "NOT_ON_SALE"
	EORDEREXPIRED     = "ORDER_EXPIRED"
	EINVALIDSTATE     = "INVALID_STATE"
	ERATELIMITED      = "RATE_LIMITED"
	// ENOTADMITTED refuses a hold while the showtime's on-sale queue is open and the
	// caller shows no valid admission pass of theirs for it (docs/DESIGN.md "On-sale queue").
	ENOTADMITTED = "NOT_ADMITTED"
	EUNAVAILABLE = "SERVICE_UNAVAILABLE"
	EINTERNAL    = "INTERNAL"
	// ECOMPANION refuses a hold of a COMPANION seat without an adjacent ACCESSIBLE seat of
	// the same row in the same order, or with more than MaxCompanions per accessible seat.
	ECOMPANION = "COMPANION_WITHOUT_ACCESSIBLE"
	// ENOTSOLDOUT refuses joining the waiting list of a showtime with a seat AVAILABLE.
	ENOTSOLDOUT = "NOT_SOLD_OUT"
	// EWAITLISTED refuses a second active waiting-list entry of a user for a showtime.
	EWAITLISTED = "ALREADY_ON_WAITING_LIST"
	// EWALLETUNAVAILABLE: the wallet asked for is not configured on this server.
	EWALLETUNAVAILABLE = "WALLET_UNAVAILABLE"
)

// Codes of the transports (HTTP and websocket), for requests refused before or around
// execution and answers cut by the limits; sent as extensions.code like the codes above
// (docs/DESIGN.md "Error codes"). gqlgen's parse and validation codes pass through.
const (
	// EBADREQUEST refuses a request the transport cannot read: a body that is no JSON
	// GraphQL request, a websocket message that is no JSON, a refused handshake.
	EBADREQUEST           = "BAD_REQUEST"
	EUNSUPPORTEDMEDIATYPE = "UNSUPPORTED_MEDIA_TYPE"
	EMETHODNOTALLOWED     = "METHOD_NOT_ALLOWED"
	// The document's limits: fields, aliases, depth, cost; one mutation per request.
	EFIELDLIMIT        = "FIELD_LIMIT_EXCEEDED"
	EALIASLIMIT        = "ALIAS_LIMIT_EXCEEDED"
	EDEPTHLIMIT        = "DEPTH_LIMIT_EXCEEDED"
	ECOMPLEXITYLIMIT   = "COMPLEXITY_LIMIT_EXCEEDED"
	EMULTIPLEMUTATIONS = "MULTIPLE_MUTATIONS"
	// The answer's limits.
	ERESPONSETOOLARGE = "RESPONSE_TOO_LARGE"
	ETOOMANYERRORS    = "TOO_MANY_ERRORS"
	// Persisted queries; Apollo's persisted-queries link retries with the document on
	// PERSISTED_QUERY_NOT_FOUND.
	EPERSISTEDNOTFOUND   = "PERSISTED_QUERY_NOT_FOUND"
	EPERSISTEDNOTALLOWED = "PERSISTED_QUERY_NOT_ALLOWED"
)

// Messages of the codes whose wording never depends on the case: one wording each.
const (
	unavailableMessage = "service temporarily unavailable, try again shortly"
	internalMessage    = "internal error"
)

// Error is an error a client may see: a code from the list above and a message a
// front-end developer can show. Anything that is not an *Error is INTERNAL and its
// text never leaves the server.
type Error struct {
	Code    string
	Message string
	// Extensions are extra fields of extensions, sent to the client as they are (e.g.
	// "seatIds" for SEATS_UNAVAILABLE, the API's ids of the seats: package nodeid).
	Extensions map[string]any
}

func (e *Error) Error() string {
	return fmt.Sprintf("seatflow error: code=%s message=%s", e.Code, e.Message)
}

// Errorf returns an *Error with the given code and formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Unavailable wraps cause, a store failing or refusing work (a retry may succeed), as
// SERVICE_UNAVAILABLE; op names what failed, for the log. The cause stays in the chain.
func Unavailable(op string, cause error) error {
	return fmt.Errorf("%s: %w: %w", op, &Error{Code: EUNAVAILABLE, Message: unavailableMessage}, cause)
}

// ErrorCode returns the code of the first *Error in err's chain, INTERNAL for any other
// error and "" for nil.
func ErrorCode(err error) string {
	var e *Error
	if err == nil {
		return ""
	} else if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the message of the first *Error in err's chain, or a generic
// message that reveals nothing for any other error.
func ErrorMessage(err error) string {
	var e *Error
	if err == nil {
		return ""
	} else if errors.As(err, &e) {
		return e.Message
	}
	return internalMessage
}
