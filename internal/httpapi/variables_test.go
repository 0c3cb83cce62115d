package httpapi

import (
	"net/http"
	"testing"
)

// TestVariableErrors: a variable that is missing, null or of the wrong type is refused
// with a sentence that names it, its place in an input and its type.
func TestVariableErrors(t *testing.T) {
	a := newAPI(t, nil)
	const movie = `query($id: ID!) { movie(id: $id) { id } }`
	const hold = `mutation($in: HoldSeatsInput!) { holdSeats(input: $in) { id } }`
	cases := []struct {
		name, query string
		vars        map[string]any
		message     string
	}{
		{"Missing", movie, nil, "variable $id of type ID! was not provided"},
		{"Null", movie, map[string]any{"id": nil}, "variable $id of type ID! cannot be null"},
		{"InputFieldMissing", hold, map[string]any{"in": map[string]any{"seatIds": []any{}, "idempotencyKey": "k"}},
			"variable $in.showtimeId of type ID! was not provided"},
		{"ListElementWrongType", hold, map[string]any{"in": map[string]any{"showtimeId": "x", "seatIds": []any{true}, "idempotencyKey": "k"}},
			"variable $in.seatIds[0] of type ID!: cannot use bool as ID"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := a.query(t, c.query, c.vars, nil)
			wantAnswer(t, got, http.StatusOK, "GRAPHQL_VALIDATION_FAILED")
			if len(got.Errors) != 1 || got.Errors[0].Message != c.message {
				t.Errorf("errors = %s, want %q", got.raw, c.message)
			}
		})
	}
}
