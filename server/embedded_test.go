package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"seatflow/internal/tooling/testenv"
)

// TestEmbeddedModeServesDemoData starts the real `serve` command with nothing configured
// but a port and a SQLite path, and asks it the README's first query.
func TestEmbeddedModeServesDemoData(t *testing.T) {
	t.Setenv("SEATFLOW_MYSQL_DSN", "")
	t.Setenv("SEATFLOW_REDIS_URL", "")
	t.Setenv("SEATFLOW_REDIS_CLUSTER", "")
	t.Setenv("SEATFLOW_JWT_SECRET", "")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	out := &testenv.SyncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, []string{"serve", "-addr", addr, "-sqlite-path", filepath.Join(t.TempDir(), "demo.db")}, out, io.Discard)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve returned %v", err)
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "admin token") {
		if time.Now().After(deadline) {
			t.Fatalf("server did not start; output: %s", out.String())
		}
		select {
		case err := <-done:
			t.Fatalf("serve exited: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	body, _ := json.Marshal(map[string]string{"query": `{ movies(first: 5) { edges { node { title showtimes { startsAt hall { name } } } } } showtime(id: "U2hvd3RpbWU6MQ") { hall { name seats { id } } } }`})
	resp, err := http.Post("http://"+addr+"/query", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct {
		Data struct {
			Movies struct {
				Edges []struct {
					Node struct {
						Title     string
						Showtimes []struct {
							Hall struct{ Name string }
						}
					}
				}
			}
			Showtime struct {
				Hall struct {
					Name  string
					Seats []struct{ ID string }
				}
			}
		}
		Errors []any
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || len(got.Errors) > 0 {
		t.Fatalf("decode: %v, errors: %v", err, got.Errors)
	}
	edges := got.Data.Movies.Edges
	if len(edges) != 4 || len(edges[0].Node.Showtimes) == 0 {
		t.Fatalf("demo catalog = %+v", edges)
	}
	if h := got.Data.Showtime.Hall; h.Name != "Hall 1" || len(h.Seats) != 150 {
		t.Fatalf("showtime 1's hall = %s with %d seats, want Hall 1 with 150", h.Name, len(h.Seats))
	}
	for _, path := range []string{"/healthz", "/readyz", "/"} {
		r, err := http.Get("http://" + addr + path)
		if err != nil || r.StatusCode != 200 {
			t.Fatalf("GET %s: %v %v", path, r.StatusCode, err)
		}
		r.Body.Close()
	}
}
