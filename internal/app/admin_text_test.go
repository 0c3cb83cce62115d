package app

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestAdminTextLimitsAndStorageAgree: the limits of admin text count characters, as the
// columns do (utf8mb4 varchar(n)), so a title of 150 "é" (300 bytes) is stored and read
// back whole, and one over the limit is refused in the product's words naming the field,
// never ent's. Control characters (C0, DEL, C1) and bidirectional overrides and isolates
// are refused in every admin text; a synopsis may hold line feeds.
func TestAdminTextLimitsAndStorageAgree(t *testing.T) {
	a := newTestApp(t)
	const movieQ = `mutation($in: MovieInput!) { createMovie(input: $in) { id title synopsis rating genres posterUrl } }`
	type movieOut struct {
		Title, Synopsis, Rating, PosterURL string
		Genres                             []string
	}
	movie := func(change map[string]any) map[string]any {
		in := map[string]any{"title": "Metropolis", "durationMinutes": 153}
		for k, v := range change {
			in[k] = v
		}
		return map[string]any{"in": in}
	}
	// must runs a request that must succeed, failing the subtest t (a.must fails the test).
	must := func(t *testing.T, query string, vars map[string]any, dst any) {
		t.Helper()
		r := a.do(a.admin, query, vars)
		if len(r.Errors) > 0 {
			t.Fatalf("unexpected errors: %+v", r.Errors)
		}
		if dst != nil {
			if err := json.Unmarshal(r.Data, dst); err != nil {
				t.Fatal(err)
			}
		}
	}
	hall := func(name, label string) map[string]any {
		return map[string]any{"in": map[string]any{"name": name, "rows": []map[string]any{{"label": label, "seats": 2}}}}
	}
	t.Run("MultibyteAtTheLimitsStored", func(t *testing.T) {
		in := map[string]any{"title": strings.Repeat("é", 200), "synopsis": strings.Repeat("ß", 5000),
			"rating": strings.Repeat("Ü", 20), "genres": []string{strings.Repeat("ü", 40)},
			"posterUrl": "https://img.example/" + strings.Repeat("é", 480)}
		var out struct{ CreateMovie movieOut }
		must(t, movieQ, movie(in), &out)
		got := out.CreateMovie
		if got.Title != in["title"] || got.Synopsis != in["synopsis"] || got.Rating != in["rating"] ||
			got.Genres[0] != in["genres"].([]string)[0] || got.PosterURL != in["posterUrl"] {
			t.Fatalf("stored movie differs from the input: title %d characters, synopsis %d, rating %q",
				len([]rune(got.Title)), len([]rune(got.Synopsis)), got.Rating)
		}
		var h struct{ CreateHall struct{ Name string } }
		must(t, createHallQ, hall(strings.Repeat("ü", 100), strings.Repeat("Ä", 8)), &h)
		if h.CreateHall.Name != strings.Repeat("ü", 100) {
			t.Fatalf("hall name %q", h.CreateHall.Name)
		}
	})
	t.Run("TheIssuesTitle", func(t *testing.T) {
		must(t, movieQ, movie(map[string]any{"title": strings.Repeat("é", 150)}), nil)
	})
	t.Run("SynopsisMayHoldLineFeeds", func(t *testing.T) {
		must(t, movieQ, movie(map[string]any{"synopsis": "First paragraph.\n\nSecond."}), nil)
	})
	refused := []struct {
		name, query string
		vars        map[string]any
		field       string
	}{
		{"TitleOverTheLimit", movieQ, movie(map[string]any{"title": strings.Repeat("é", 201)}), "title"},
		{"SynopsisOverTheLimit", movieQ, movie(map[string]any{"synopsis": strings.Repeat("é", 5001)}), "synopsis"},
		{"RatingOverTheLimit", movieQ, movie(map[string]any{"rating": strings.Repeat("é", 21)}), "rating"},
		{"HallNameOverTheLimit", createHallQ, hall(strings.Repeat("ü", 101), "A"), "name"},
		{"RowLabelOverTheLimit", createHallQ, hall("H", strings.Repeat("Ä", 9)), "label"},
	}
	for field, in := range map[string]func(string) map[string]any{
		"title":    func(s string) map[string]any { return movie(map[string]any{"title": "Metro" + s + "polis"}) },
		"synopsis": func(s string) map[string]any { return movie(map[string]any{"synopsis": "A city" + s}) },
		"rating":   func(s string) map[string]any { return movie(map[string]any{"rating": "PG" + s}) },
		"genre":    func(s string) map[string]any { return movie(map[string]any{"genres": []string{"Drama" + s}}) },
		"posterUrl": func(s string) map[string]any {
			return movie(map[string]any{"posterUrl": "https://img.example/" + s + ".png"})
		},
	} {
		for name, c := range controls {
			refused = append(refused, struct {
				name, query string
				vars        map[string]any
				field       string
			}{field + name, movieQ, in(c), field})
		}
	}
	for name, c := range controls {
		refused = append(refused, struct {
			name, query string
			vars        map[string]any
			field       string
		}{"hallName" + name, createHallQ, hall("Ha"+c+"ll", "A"), "name"},
			struct {
				name, query string
				vars        map[string]any
				field       string
			}{"rowLabel" + name, createHallQ, hall("Hall", "A"+c+"B"), "label"})
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			r := a.do(a.admin, c.query, c.vars)
			if r.Code() != "BAD_USER_INPUT" {
				t.Fatalf("code %q (%+v), data %s; want BAD_USER_INPUT", r.Code(), r.Errors, r.Data)
			}
			if msg := r.Errors[0].Message; !strings.Contains(msg, c.field) || strings.Contains(msg, "ent:") || strings.Contains(msg, "validator") {
				t.Errorf("message %q: want the product's words naming %s", msg, c.field)
			}
		})
	}
	t.Run("UpdateMovieHasTheSameRules", func(t *testing.T) {
		id := a.createMovie("Nosferatu", 94)
		r := a.do(a.admin, `mutation($id: ID!, $in: MovieInput!) { updateMovie(id: $id, input: $in) { id } }`,
			map[string]any{"id": id, "in": map[string]any{"title": "Nosfe\u202eratu", "durationMinutes": 94}})
		if r.Code() != "BAD_USER_INPUT" {
			t.Fatalf("updateMovie with an override: %q %+v", r.Code(), r.Errors)
		}
	})
}

// controls are characters no admin text may hold, by name.
var controls = map[string]string{
	"NUL": "\x00", "Tab": "\t", "Escape": "\x1b", "DEL": "\x7f", "C1": "\u0085",
	"RightToLeftOverride": "\u202e", "LeftToRightIsolate": "\u2066",
}
