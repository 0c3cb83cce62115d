package passkit

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"
)

// The pass rules below are the same rules as internal/wallet's (AuthenticationToken,
// LastUpdated); merged by the lead: wallet's are the ones to keep.

// AuthenticationToken is a pass's authenticationToken: hex of HMAC-SHA256 over its serial
// number with key (auth.DeriveKey of the instance's JWT secret, "wallet-pass").
func AuthenticationToken(key []byte, serial string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(serial))
	return hex.EncodeToString(m.Sum(nil))
}

// LastUpdated is when a ticket's pass last changed: the latest of its showtime's
// updated_at (a reschedule or a cancellation writes it), the ticket's created_at and its
// revoked_at (a refund).
func LastUpdated(showtimeUpdatedAt, ticketCreatedAt time.Time, ticketRevokedAt *time.Time) time.Time {
	t := ticketCreatedAt
	if showtimeUpdatedAt.After(t) {
		t = showtimeUpdatedAt
	}
	if ticketRevokedAt != nil && ticketRevokedAt.After(t) {
		t = *ticketRevokedAt
	}
	return t
}

// Tag is the web service's update tag of a time: its Unix microseconds.
func Tag(t time.Time) int64 { return t.UnixMicro() }

// FormatTag is a tag as the devices see it: a decimal string.
func FormatTag(tag int64) string { return strconv.FormatInt(tag, 10) }
