package seatflow

import (
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"
)

// The rules every text a client gets stored shares: movie titles, hall and row names,
// idempotency keys, payment references, user ids. How long each may be is its owner's.

// CheckText reports what makes s unfit to store and show, or nil: invalid UTF-8, a control
// character (C0, DEL, C1; a line feed only when lineFeeds is set, for a text of
// paragraphs), or a bidirectional embedding, override or isolate (U+202A–U+202E,
// U+2066–U+2069), which reorders the text around it wherever it is shown: a title could
// read as another, a log line could hide what follows it.
func CheckText(s string, lineFeeds bool) error {
	if !utf8.ValidString(s) {
		return errors.New("is not valid UTF-8")
	}
	for _, r := range s {
		if r == '\n' && lineFeeds {
			continue
		}
		if unicode.IsControl(r) || (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069) {
			return fmt.Errorf("contains the control character %U", r)
		}
	}
	return nil
}

// CheckKey is CheckText for a text compared as an identifier, which also must not start or
// end with white space: MySQL's PAD SPACE collations (utf8mb4_bin on MariaDB) take "k"
// and "k " as one key, where Redis and Go take two. Without white space at the ends the
// stores compare keys alike, byte for byte.
func CheckKey(s string) error {
	first, _ := utf8.DecodeRuneInString(s)
	last, _ := utf8.DecodeLastRuneInString(s)
	if s != "" && (unicode.IsSpace(first) || unicode.IsSpace(last)) {
		return errors.New("starts or ends with white space")
	}
	return CheckText(s, false)
}
