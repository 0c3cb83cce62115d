package seatrender_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/transport"

	"seatflow"
	"seatflow/graph"
	"seatflow/internal/catalog"
	"seatflow/internal/nodeid"
	"seatflow/internal/seatrender"
	"seatflow/internal/seatrender/seatrendertest"
	"seatflow/internal/seats"
	"seatflow/internal/tooling/testenv"
)

// world is one showtime on sale, its seat hash with held and sold seats, and two GraphQL
// servers over it: the executor alone, and the executor with the renderer.
type world struct {
	show             int
	store            *seats.Store
	executor, render *httptest.Server
}

func newWorld(t *testing.T) *world {
	t.Helper()
	db := testenv.MySQL(t).Client
	r := testenv.NewRedis(t)
	now := time.Date(2026, 11, 30, 18, 0, 0, 0, time.UTC)
	showID, hallID := testenv.Showtime(t, db, now, testenv.ShowtimeSpec{Rows: 5, PerRow: 8, PremiumFirstRow: true})
	cat := &catalog.Service{DB: db, Now: func() time.Time { return now }}
	hall, err := cat.Hall(context.Background(), hallID)
	if err != nil {
		t.Fatal(err)
	}
	// A row label with characters the JSON writer must escape.
	db.Seat.UpdateOneID(hall.Seats[0].ID).SetRowLabel("A\"\\\t\u0001é").ExecX(context.Background())
	store := &seats.Store{RDB: r.Client, Keys: r.Keys}
	occ := []seats.Occupancy{{SeatID: hall.Seats[1].ID, UserID: "u", Token: "t1", Sold: true},
		{SeatID: hall.Seats[2].ID, UserID: "u", Token: "t2", HeldAt: now}}
	if _, err := store.Init(context.Background(), showID, hall, occ); err != nil {
		t.Fatal(err)
	}
	layouts := &seats.Layouts{Halls: cat}
	maps := &seats.Maps{Store: store, Layouts: layouts, Showtimes: cat}
	serve := func(withRenderer bool) *httptest.Server {
		srv := handler.New(graph.NewExecutableSchema(graph.Config{Resolvers: &graph.Resolver{Maps: maps}}))
		srv.AddTransport(transport.POST{})
		if withRenderer {
			srv.Use(seatrender.Extension{Maps: maps, Versions: redisVersions{store}, Memo: seatrender.NewMemo()})
		}
		ts := httptest.NewServer(srv)
		t.Cleanup(ts.Close)
		return ts
	}
	return &world{show: showID, store: store, executor: serve(false), render: serve(true)}
}

// redisVersions reads the current version from Redis every time (what the live hub does
// when it cannot vouch for one).
type redisVersions struct{ store *seats.Store }

func (r redisVersions) CurrentVersion(ctx context.Context, showID int) (int, error) {
	return r.store.Version(ctx, showID)
}

func post(t *testing.T, url, query string, vars map[string]any) []byte {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRendererWritesTheExecutorsBytes compares, for random selections, the whole HTTP
// response of the executor with the renderer's: they must be equal byte for byte, on the
// first request (rendered) and the second (from the memo).
func TestRendererWritesTheExecutorsBytes(t *testing.T) {
	w := newWorld(t)
	rng := rand.New(rand.NewPCG(7, 11))
	for i := range 150 {
		vars := map[string]any{"id": nodeid.Encode(nodeid.Showtime, w.show)}
		query := seatrendertest.Query(rng, "query", "SeatMap", "m: seatMap(showtimeId: $id)")
		if strings.Contains(query, "$yes") {
			vars["yes"] = rng.IntN(2) == 0
		}
		want := post(t, w.executor.URL, query, vars)
		if bytes.Contains(want, []byte(`"errors"`)) {
			t.Fatalf("selection %d: the executor refused %s: %s", i, query, want)
		}
		for _, round := range []string{"rendered", "memo"} {
			if got := post(t, w.render.URL, query, vars); !bytes.Equal(got, want) {
				t.Fatalf("selection %d (%s) differs:\nquery: %s\n  got %s\n want %s", i, round, query, got, want)
			}
		}
	}
}

// TestMemoFollowsTheVersion changes the map between two reads: the second read must show
// the change, never the memo's older rendering.
func TestMemoFollowsTheVersion(t *testing.T) {
	w := newWorld(t)
	const query = `query($id: ID!) { seatMap(showtimeId: $id) { version seats { seat { id } status } } }`
	vars := map[string]any{"id": nodeid.Encode(nodeid.Showtime, w.show)}
	before := post(t, w.render.URL, query, vars)
	if !bytes.Equal(before, post(t, w.render.URL, query, vars)) {
		t.Fatal("two reads of an unchanged map differ")
	}
	ctx := context.Background()
	m, err := w.store.Version(ctx, w.show)
	if err != nil {
		t.Fatal(err)
	}
	hall := newHallFromExecutor(t, w, vars)
	if err := w.store.Hold(ctx, seats.HoldRequest{ShowtimeID: w.show, Layout: seats.NewLayout(hall),
		SeatIDs: []int{hall.Seats[5].ID}, Token: "t3", UserID: "v", AllowGaps: true}); err != nil {
		t.Fatal(err)
	}
	after := post(t, w.render.URL, query, vars)
	want := post(t, w.executor.URL, query, vars)
	if !bytes.Equal(after, want) || bytes.Equal(after, before) {
		t.Fatalf("after a hold (version %d → %d):\n got %s\nwant %s", m, m+1, after, want)
	}
}

// newHallFromExecutor reads the hall's seat ids through the API.
func newHallFromExecutor(t *testing.T, w *world, vars map[string]any) *seatflow.Hall {
	t.Helper()
	var out struct {
		Data struct {
			SeatMap struct {
				Seats []struct {
					Seat struct {
						ID     string
						Row    string
						Number int
					}
				}
			}
		}
	}
	raw := post(t, w.executor.URL, `query($id: ID!) { seatMap(showtimeId: $id) { seats { seat { id row number } } } }`, vars)
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	hall := &seatflow.Hall{}
	for _, s := range out.Data.SeatMap.Seats {
		_, ids, err := nodeid.Decode(s.Seat.ID)
		if err != nil {
			t.Fatal(err)
		}
		id := ids[0]
		hall.Seats = append(hall.Seats, seatflow.Seat{ID: id, Row: s.Seat.Row, Number: s.Seat.Number, Sellable: true})
	}
	return hall
}
