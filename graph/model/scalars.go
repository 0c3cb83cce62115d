// Package model holds the GraphQL-only types: scalars and the generated models that have
// no domain counterpart.
package model

import (
	"io"
	"strconv"
	"time"

	"github.com/99designs/gqlgen/graphql"

	"seatflow"
)

// MarshalID writes a numeric id as a GraphQL ID string.
func MarshalID(id int) graphql.Marshaler {
	return graphql.WriterFunc(func(w io.Writer) { io.WriteString(w, strconv.Quote(strconv.Itoa(id))) })
}

// UnmarshalID reads a GraphQL ID; ids are positive integers, anything else is BAD_USER_INPUT.
func UnmarshalID(v any) (int, error) {
	var s string
	switch v := v.(type) {
	case string:
		s = v
	case int64:
		s = strconv.FormatInt(v, 10)
	case int:
		s = strconv.Itoa(v)
	default:
		return 0, seatflow.Errorf(seatflow.EINVALID, "an id must be a string of digits, got %T", v)
	}
	id, err := strconv.Atoi(s)
	if err != nil || id <= 0 {
		return 0, seatflow.Errorf(seatflow.EINVALID, "%q is not a valid id", truncate(s))
	}
	return id, nil
}

// MarshalTime writes an RFC 3339 time in UTC.
func MarshalTime(t time.Time) graphql.Marshaler {
	return graphql.WriterFunc(func(w io.Writer) {
		io.WriteString(w, strconv.Quote(t.UTC().Format(time.RFC3339)))
	})
}

// UnmarshalTime reads an RFC 3339 time.
func UnmarshalTime(v any) (time.Time, error) {
	s, ok := v.(string)
	if !ok {
		return time.Time{}, seatflow.Errorf(seatflow.EINVALID, "a time must be an RFC 3339 string, got %T", v)
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, seatflow.Errorf(seatflow.EINVALID, "%q is not an RFC 3339 time (e.g. 2026-12-01T19:30:00Z)", truncate(s))
	}
	return t, nil
}

// MarshalDate writes a YYYY-MM-DD day.
func MarshalDate(d string) graphql.Marshaler {
	return graphql.WriterFunc(func(w io.Writer) { io.WriteString(w, strconv.Quote(d)) })
}

// UnmarshalDate reads a YYYY-MM-DD day.
func UnmarshalDate(v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", seatflow.Errorf(seatflow.EINVALID, "a date must be a YYYY-MM-DD string, got %T", v)
	}
	if _, err := time.Parse(time.DateOnly, s); err != nil {
		return "", seatflow.Errorf(seatflow.EINVALID, "%q is not a date in the form YYYY-MM-DD", truncate(s))
	}
	return s, nil
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
