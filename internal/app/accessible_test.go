package app

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"
)

// Accessible seats and their companions through the API: halls that have them, their
// prices, holds and suggestions (docs/DESIGN.md "Accessible seats and companions").

// accessibleHall creates a hall whose row A is A1 accessible, A2–A4 companions, A5–A8
// standard, and row B is eight standard seats; it returns the hall and its seats by label.
func (a *testApp) accessibleHall(name string) (string, map[string]string) {
	a.t.Helper()
	var out struct {
		CreateHall struct {
			ID    string
			Seats []struct {
				ID, Row, Kind string
				Number        int
			}
		}
	}
	a.must(a.admin, createHallQ, map[string]any{"in": map[string]any{"name": name, "rows": []map[string]any{
		{"label": "A", "seats": 8, "accessible": []int{1}, "companion": []int{2, 3, 4}},
		{"label": "B", "seats": 8}}}}, &out)
	seats := map[string]string{}
	for _, s := range out.CreateHall.Seats {
		label := fmt.Sprint(s.Row, s.Number)
		seats[label] = s.ID
		want := "STANDARD"
		switch label {
		case "A1":
			want = "ACCESSIBLE"
		case "A2", "A3", "A4":
			want = "COMPANION"
		}
		if s.Kind != want {
			a.t.Fatalf("seat %s is %s, want %s", label, s.Kind, want)
		}
	}
	return out.CreateHall.ID, seats
}

var accessiblePrices = []map[string]any{{"kind": "STANDARD", "amountCents": 1000}, {"kind": "ACCESSIBLE", "amountCents": 800},
	{"kind": "COMPANION", "amountCents": 800}}

func TestAccessibleHallsAndPrices(t *testing.T) {
	a := newTestApp(t)
	hall, _ := a.accessibleHall("Hall 1")
	movie := a.createMovie("Dune", 155)

	t.Run("BadRowsRefused", func(t *testing.T) {
		for name, row := range map[string]map[string]any{
			"CompanionAlone":        {"label": "A", "seats": 6, "companion": []int{3}},
			"CompanionsTooMany":     {"label": "A", "seats": 6, "accessible": []int{1}, "companion": []int{2, 3, 4, 5}},
			"CompanionPastAWall":    {"label": "A", "seats": 6, "accessible": []int{1}, "companion": []int{3}, "unsellable": []int{2}},
			"BothKinds":             {"label": "A", "seats": 6, "accessible": []int{1, 2}, "companion": []int{2}},
			"NotASeatOfTheRow":      {"label": "A", "seats": 6, "accessible": []int{7}},
			"ListedTwice":           {"label": "A", "seats": 6, "accessible": []int{1, 1}},
			"AWholeRowOfCompanions": {"label": "A", "seats": 6, "kind": "COMPANION"},
		} {
			t.Run(name, func(t *testing.T) {
				a.wantCode(a.admin, createHallQ, map[string]any{"in": map[string]any{"name": "Bad " + name,
					"rows": []map[string]any{row}}}, "BAD_USER_INPUT")
			})
		}
	})
	t.Run("PricesAboveStandardRefused", func(t *testing.T) {
		start := testNow.Add(30 * time.Hour).Format(time.RFC3339)
		for _, prices := range [][]map[string]any{
			{{"kind": "STANDARD", "amountCents": 1000}, {"kind": "ACCESSIBLE", "amountCents": 1001}, {"kind": "COMPANION", "amountCents": 800}},
			{{"kind": "STANDARD", "amountCents": 1000}, {"kind": "ACCESSIBLE", "amountCents": 800}, {"kind": "COMPANION", "amountCents": 1200}},
			append(slices.Clone(accessiblePrices), map[string]any{"kind": "STANDARD", "ticketType": "CHILD", "amountCents": 500},
				map[string]any{"kind": "COMPANION", "ticketType": "CHILD", "amountCents": 600}),
		} {
			r := a.wantCode(a.admin, createShowtimeQ, map[string]any{"in": map[string]any{"movieId": movie, "hallId": hall,
				"startsAt": start, "prices": prices}}, "BAD_USER_INPUT")
			t.Log(r.Errors[0].Message)
		}
		// At the standard price, or for a type without a standard price, they are fine.
		a.must(a.admin, createShowtimeQ, map[string]any{"in": map[string]any{"movieId": movie, "hallId": hall, "startsAt": start,
			"prices": append(slices.Clone(accessiblePrices), map[string]any{"kind": "COMPANION", "ticketType": "SENIOR", "amountCents": 1500})}}, nil)
	})
}

// accessibleShowtime is an on-sale showtime (gaps allowed) in a new accessibleHall; it
// returns the showtime and the hall's seats by label.
func (a *testApp) accessibleShowtime() (string, map[string]string) {
	a.t.Helper()
	hall, seat := a.accessibleHall("Hall 1")
	var out struct{ CreateShowtime struct{ ID string } }
	a.must(a.admin, createShowtimeQ, map[string]any{"in": map[string]any{"movieId": a.createMovie("Dune", 155), "hallId": hall,
		"startsAt": testNow.Add(30 * time.Hour).Format(time.RFC3339), "prices": accessiblePrices, "allowSeatGaps": true}}, &out)
	a.openSales(out.CreateShowtime.ID)
	return out.CreateShowtime.ID, seat
}

func TestAccessibleHoldsAndSuggestions(t *testing.T) {
	a := newTestApp(t)
	show, seat := a.accessibleShowtime()
	alice, bob := a.token("alice", "customer"), a.token("bob", "customer")
	needing := func(seats []string, key string) map[string]any {
		v := holdVars(show, seats, key)
		v["in"].(map[string]any)["needsAccessible"] = true
		return v
	}

	best := func(token string, count int, accessible any) *gqlResponse {
		return a.do(token, `query($id: ID!, $n: Int!, $a: Int) { bestSeats(showtimeId: $id, count: $n, accessible: $a) { id } }`,
			map[string]any{"id": show, "n": count, "a": accessible})
	}
	bestIDs := func(count int, accessible any) []string {
		t.Helper()
		r := best("", count, accessible)
		if len(r.Errors) > 0 {
			t.Fatalf("bestSeats(%d, %v): %+v", count, accessible, r.Errors)
		}
		var out struct{ BestSeats []struct{ ID string } }
		if err := json.Unmarshal(r.Data, &out); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, s := range out.BestSeats {
			ids = append(ids, s.ID)
		}
		return ids
	}

	t.Run("CompanionWithoutAccessible", func(t *testing.T) {
		r := a.wantCode(alice, holdQ, needing([]string{seat["A2"]}, "c1"), "COMPANION_WITHOUT_ACCESSIBLE")
		if ids := fmt.Sprint(r.Errors[0].Extensions["seatIds"]); ids != fmt.Sprint([]string{seat["A2"]}) {
			t.Errorf("extensions.seatIds = %s, want [%s]", ids, seat["A2"])
		}
		if st, _ := a.seatStatuses(show); st[seat["A2"]] != "AVAILABLE" {
			t.Errorf("A2 is %s after the refusal", st[seat["A2"]])
		}
	})
	t.Run("AccessibleKeptWhileOthersAreFree", func(t *testing.T) {
		r := a.wantCode(bob, holdQ, holdVars(show, []string{seat["A1"]}, "b1"), "SEATS_UNAVAILABLE")
		if ids := fmt.Sprint(r.Errors[0].Extensions["seatIds"]); ids != fmt.Sprint([]string{seat["A1"]}) {
			t.Errorf("extensions.seatIds = %s, want [%s]", ids, seat["A1"])
		}
	})
	t.Run("Suggestions", func(t *testing.T) {
		if got := bestIDs(3, 1); !slices.Equal(got, []string{seat["A1"], seat["A2"], seat["A3"]}) {
			t.Errorf("bestSeats(3, accessible 1) = %v, want A1–A3", got)
		}
		for _, id := range bestIDs(3, nil) {
			if id == seat["A1"] || id == seat["A2"] || id == seat["A3"] || id == seat["A4"] {
				t.Errorf("the ordinary suggestion offers %s, a reserved seat", id)
			}
		}
		for _, c := range []struct {
			count      int
			accessible any
		}{{3, 4}, {3, -1}, {5, 1}, {9, 2}} {
			if r := best("", c.count, c.accessible); r.Code() != "BAD_USER_INPUT" {
				t.Errorf("bestSeats(%d, accessible %v): code %q, want BAD_USER_INPUT", c.count, c.accessible, r.Code())
			}
		}
	})
	t.Run("HeldByWhoNeedsIt", func(t *testing.T) {
		var out struct{ HoldSeats orderOut }
		a.must(alice, holdQ, needing([]string{seat["A1"], seat["A2"], seat["A3"], seat["A4"]}, "a1"), &out)
		if out.HoldSeats.AmountCents != 3200 {
			t.Errorf("amount = %d, want 4 × 800", out.HoldSeats.AmountCents)
		}
		if got := bestIDs(1, 1); len(got) != 0 {
			t.Errorf("bestSeats(1, accessible 1) with no accessible seat left = %v", got)
		}
	})
}
