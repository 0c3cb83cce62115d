// Package seatflow holds what every layer of SeatFlow shares: the one application error
// type and its codes. Domain packages live under internal/, the API under graph/.
package seatflow

import (
	"errors"
	"fmt"
)

// Error codes, sent to clients as extensions.code (DESIGN.md "API").
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
	EUNAVAILABLE      = "SERVICE_UNAVAILABLE"
	EINTERNAL         = "INTERNAL"
)

// Error is an error a client may see: a code from the list above and a message a
// front-end developer can show. Anything that is not an *Error is INTERNAL and its
// text never leaves the server.
type Error struct {
	Code    string
	Message string
	// Extensions are extra fields for extensions (e.g. "seatIds" for SEATS_UNAVAILABLE).
	Extensions map[string]any
}

func (e *Error) Error() string {
	return fmt.Sprintf("seatflow error: code=%s message=%s", e.Code, e.Message)
}

// Errorf returns an *Error with the given code and formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
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
	return "internal error"
}
