// Package model holds the GraphQL-only types: scalars and the generated models that have
// no domain counterpart.
package model

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/99designs/gqlgen/graphql"

	"seatflow"
	"seatflow/internal/nodeid"
)

// MarshalID writes a database id as the API's id of the object it names (nodeid): the
// type comes from the field being written, the object's own for "id", the one named by
// the field otherwise (showtimeId, showtimeIds).
func MarshalID(id int) graphql.ContextMarshaler {
	return graphql.ContextWriterFunc(func(ctx context.Context, w io.Writer) error {
		typ, err := outputType(ctx)
		if err != nil {
			return err
		}
		var buf [64]byte
		b := append(buf[:0], '"')
		b = nodeid.Append(b, typ, id)
		_, err = w.Write(append(b, '"'))
		return err
	})
}

// UnmarshalID reads an id argument or input field into its database id. The id must name
// an object of the type the argument takes ("id" of the field's own type; showtimeId a
// Showtime, …): a malformed id is BAD_USER_INPUT, one naming another type NOT_FOUND.
func UnmarshalID(ctx context.Context, v any) (int, error) {
	return DecodeID(v, inputType(ctx))
}

// DecodeID reads id, which must name an object of type want ("Node": any node type).
func DecodeID(v any, want string) (int, error) {
	s, ok := v.(string)
	if !ok {
		return 0, seatflow.Errorf(seatflow.EINVALID, "an id must be a string, got %s", kindOf(v))
	}
	typ, parts, err := nodeid.Decode(s)
	if err != nil || len(parts) != 1 {
		return 0, seatflow.Errorf(seatflow.EINVALID, "%q is not a valid id: use an id the API returned", truncate(s))
	}
	if typ != want && !(want == nodeType && nodeid.IsNode(typ)) {
		return 0, seatflow.Errorf(seatflow.ENOTFOUND, "no %s has the id %q", strings.ToLower(want), truncate(s))
	}
	return parts[0], nil
}

// nodeType is the schema's interface of the objects node(id:) fetches.
const nodeType = "Node"

// idTypes are the types of the id fields and arguments not called id, by name.
var idTypes = map[string]string{
	"showtimeId": nodeid.Showtime, "showtimeIds": nodeid.Showtime, "movieId": nodeid.Movie,
	"hallId": nodeid.Hall, "cinemaId": nodeid.Cinema, "seatIds": nodeid.Seat, "seatId": nodeid.Seat, "orderId": nodeid.Order, "ticketId": nodeid.Ticket,
	"entryId": nodeid.WaitingListEntry,
}

// outputType is the type of the id the field in ctx writes.
func outputType(ctx context.Context) (string, error) {
	for fc := graphql.GetFieldContext(ctx); fc != nil; fc = fc.Parent {
		if fc.Field.Field == nil {
			continue // a list element
		}
		if fc.Field.Name == "id" {
			return fc.Object, nil
		}
		if typ, ok := idTypes[fc.Field.Name]; ok {
			return typ, nil
		}
		return "", fmt.Errorf("the id field %s.%s has no id type", fc.Object, fc.Field.Name)
	}
	return "", errors.New("an id written outside a field")
}

// inputType is the type of the id the argument or input field in ctx takes.
func inputType(ctx context.Context) string {
	for pc := graphql.GetPathContext(ctx); pc != nil; pc = pc.Parent {
		if pc.Field == nil {
			continue // a list element
		}
		if typ, ok := idTypes[*pc.Field]; ok {
			return typ
		}
		break
	}
	// id and ids take the type of what the field returns (node: any Node).
	if fc := graphql.GetFieldContext(ctx); fc != nil && fc.Field.Field != nil && fc.Field.Definition != nil {
		return fc.Field.Definition.Type.Name()
	}
	return nodeType
}

// MarshalSeatRef writes the id of a seat's state in one showtime.
func MarshalSeatRef(r seatflow.SeatRef) graphql.Marshaler {
	return graphql.WriterFunc(func(w io.Writer) {
		var buf [64]byte
		b := append(buf[:0], '"')
		b = nodeid.Append(b, nodeid.SeatState, r.ShowtimeID, r.SeatID)
		w.Write(append(b, '"'))
	})
}

// UnmarshalSeatRef reads the id of a seat's state (no argument takes one today).
func UnmarshalSeatRef(v any) (seatflow.SeatRef, error) {
	s, _ := v.(string)
	typ, parts, err := nodeid.Decode(s)
	if err != nil || typ != nodeid.SeatState || len(parts) != 2 {
		return seatflow.SeatRef{}, seatflow.Errorf(seatflow.EINVALID, "%q is not the id of a seat's state", truncate(s))
	}
	return seatflow.SeatRef{ShowtimeID: parts[0], SeatID: parts[1]}, nil
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return "a number"
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

// The days a Date may name (the schema's Date says so): every showtime's day (they are
// scheduled at most two years ahead) with room to spare, and far inside what the stores
// and time arithmetic take, a day's bounds shifted by the cinema's time zone included
// (MySQL's datetime ends in 9999, Go's years at 1 and 9999).
const (
	FirstDate = "1970-01-01"
	LastDate  = "2100-12-31"
)

// UnmarshalDate reads a YYYY-MM-DD day from FirstDate to LastDate.
func UnmarshalDate(v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", seatflow.Errorf(seatflow.EINVALID, "a date must be a YYYY-MM-DD string, got %T", v)
	}
	if _, err := time.Parse(time.DateOnly, s); err != nil {
		return "", seatflow.Errorf(seatflow.EINVALID, "%q is not a date in the form YYYY-MM-DD", truncate(s))
	}
	if s < FirstDate || s > LastDate { // both YYYY-MM-DD: their order is the days'
		return "", seatflow.Errorf(seatflow.EINVALID, "%s is outside the days SeatFlow knows, %s to %s", s, FirstDate, LastDate)
	}
	return s, nil
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
