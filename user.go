package seatflow

import (
	"errors"
	"unicode"
	"unicode/utf8"
)

// MaxUserIDBytes is the longest user id (a token's subject): orders index it in MySQL,
// whose utf8mb4 index keys hold 191 characters at most.
const MaxUserIDBytes = 191

// CheckUserID reports what is wrong with a user id, or nil. An id is compared byte for
// byte in Redis but padded in MySQL ("alice" and "alice " are one user there), so an id
// must not start or end with white space; it must be valid UTF-8 without control
// characters and at most MaxUserIDBytes long.
func CheckUserID(id string) error {
	switch {
	case id == "":
		return errors.New("the user id is empty")
	case len(id) > MaxUserIDBytes:
		return errors.New("the user id is longer than 191 bytes")
	case !utf8.ValidString(id):
		return errors.New("the user id is not valid UTF-8")
	}
	first, _ := utf8.DecodeRuneInString(id)
	last, _ := utf8.DecodeLastRuneInString(id)
	if unicode.IsSpace(first) || unicode.IsSpace(last) {
		return errors.New("the user id starts or ends with white space")
	}
	for _, r := range id {
		if unicode.IsControl(r) {
			return errors.New("the user id contains a control character")
		}
	}
	return nil
}
