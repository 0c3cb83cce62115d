package passkit

import (
	"strconv"
	"time"
)

// A pass's authenticationToken and its lastUpdated are package wallet's rules
// (wallet.AuthenticationToken, wallet.LastUpdatedAt); the web service's update tag is
// lastUpdated in Unix microseconds.

// Tag is the web service's update tag of a time: its Unix microseconds.
func Tag(t time.Time) int64 { return t.UnixMicro() }

// FormatTag is a tag as the devices see it: a decimal string.
func FormatTag(tag int64) string { return strconv.FormatInt(tag, 10) }
