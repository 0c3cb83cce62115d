// Package seatrendertest draws random GraphQL selections of the seat-map types, for the
// tests that hold the renderer to gqlgen's executor byte for byte.
package seatrendertest

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Query returns a random operation of kind ("query", "subscription") whose one root field
// is root (e.g. "m: seatMap(showtimeId: $id)", with $id an ID!) selecting a random shape of
// typ ("SeatMap", "SeatMapEvent"): random subsets, aliases, __typename, repeated fields,
// inline and named fragments, and @include/@skip on a $yes variable when it uses one.
func Query(rng *rand.Rand, kind, typ, root string) string {
	s := &selection{rng: rng}
	sel := s.of(typ, 0)
	decl := "$id: ID!"
	if strings.Contains(sel+strings.Join(s.fragments, ""), "$yes") {
		decl += ", $yes: Boolean!"
	}
	return kind + "(" + decl + ") { " + root + " " + sel + " }\n" + strings.Join(s.fragments, "\n")
}

// selection draws a random selection of typ's fields: random subsets, aliases,
// __typename, repeated fields, inline and named fragments, @include/@skip on variables.
type selection struct {
	rng       *rand.Rand
	fragments []string
	n         int
}

var fieldsOf = map[string][]string{
	"SeatMap":      {"id", "showtimeId", "version", "available", "seats"},
	"SeatMapEvent": {"kind", "showtimeId", "version", "available", "seats"},
	"SeatState":    {"id", "seat", "status"},
	"Seat":         {"id", "row", "number", "x", "y", "kind", "sellable"},
}

var subOf = map[string]string{"seats": "SeatState", "seat": "Seat"}

func (s *selection) of(typ string, depth int) string {
	var parts []string
	fields := fieldsOf[typ]
	for _, f := range fields {
		if s.rng.IntN(3) == 0 {
			continue
		}
		parts = append(parts, s.field(typ, f, depth))
	}
	if len(parts) == 0 {
		parts = append(parts, s.field(typ, fields[s.rng.IntN(len(fields))], depth))
	}
	if s.rng.IntN(3) == 0 {
		parts = append(parts, "__typename")
	}
	if s.rng.IntN(4) == 0 { // a field selected twice, merged by the executor
		parts = append(parts, s.field(typ, fields[s.rng.IntN(len(fields))], depth))
	}
	s.rng.Shuffle(len(parts), func(i, j int) { parts[i], parts[j] = parts[j], parts[i] })
	switch s.rng.IntN(4) {
	case 0:
		return "{ ... on " + typ + " { " + strings.Join(parts, " ") + " } }"
	case 1:
		s.n++
		name := fmt.Sprintf("F%d", s.n)
		s.fragments = append(s.fragments, "fragment "+name+" on "+typ+" { "+strings.Join(parts, " ")+" }")
		return "{ ..." + name + " }"
	}
	return "{ " + strings.Join(parts, " ") + " }"
}

func (s *selection) field(typ, name string, depth int) string {
	out := name
	if s.rng.IntN(4) == 0 {
		out = fmt.Sprintf("a%d_%s: %s", s.rng.IntN(3), name, name)
	}
	switch s.rng.IntN(6) {
	case 0:
		out += " @include(if: $yes)"
	case 1:
		out += " @skip(if: $yes)"
	}
	if sub, ok := subOf[name]; ok {
		out += " " + s.of(sub, depth+1)
	}
	return out
}
