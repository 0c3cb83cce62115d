package seatflow

import (
	"errors"
	"fmt"
)

// MaxUserIDBytes is the longest user id (a token's subject): orders index it in MySQL,
// whose utf8mb4 index keys hold 191 characters at most.
const MaxUserIDBytes = 191

// CheckUserID reports what is wrong with a user id, or nil: it is a key (CheckKey: no
// white space at either end, no control character, valid UTF-8) of at most
// MaxUserIDBytes.
func CheckUserID(id string) error {
	switch {
	case id == "":
		return errors.New("the user id is empty")
	case len(id) > MaxUserIDBytes:
		return errors.New("the user id is longer than 191 bytes")
	}
	if err := CheckKey(id); err != nil {
		return fmt.Errorf("the user id %w", err)
	}
	return nil
}
