package seats_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"seatflow"
)

func TestConfirmAndRelease(t *testing.T) {
	ctx := context.Background()
	hall := testHall(1, 6)
	s := newStore(t, hall)
	if err := hold(s, hall, "t1", "u1", 6, 101, 102); err != nil {
		t.Fatal(err)
	}
	if err := hold(s, hall, "t2", "u2", 6, 104, 105, 106); err != nil {
		t.Fatal(err)
	}
	t.Run("ConfirmSellsHeldSeats", func(t *testing.T) {
		n, err := s.Confirm(ctx, show, "t1", []int{101, 102})
		if err != nil || n != 2 {
			t.Fatalf("Confirm = %d, %v; want 2", n, err)
		}
		if got := status(t, s, 101); got.Status != seatflow.SeatSold || got.Token != "t1" {
			t.Errorf("seat 101 = %+v, want sold to t1", got)
		}
	})
	t.Run("ConfirmIsIdempotent", func(t *testing.T) {
		_, v1, _ := s.States(ctx, show)
		n, err := s.Confirm(ctx, show, "t1", []int{101, 102})
		if err != nil || n != 2 {
			t.Fatalf("Confirm again = %d, %v; want 2", n, err)
		}
		if _, v2, _ := s.States(ctx, show); v2 != v1 {
			t.Errorf("version moved %d → %d on a no-op confirm", v1, v2)
		}
	})
	t.Run("ConfirmCountsOnlyOwnSeats", func(t *testing.T) {
		n, err := s.Confirm(ctx, show, "t1", []int{101, 103, 104})
		if err != nil || n != 1 {
			t.Fatalf("Confirm = %d, %v; want 1 (103 free, 104 someone else's)", n, err)
		}
		if got := status(t, s, 104); got.Status != seatflow.SeatHeld || got.Token != "t2" {
			t.Errorf("seat 104 = %+v, want still held by t2", got)
		}
	})
	t.Run("ReleaseOfForeignTokenChangesNothing", func(t *testing.T) {
		_, v1, _ := s.States(ctx, show)
		n, err := s.Release(ctx, show, "t3", "u2", []int{104, 105, 101})
		if err != nil || n != 0 {
			t.Fatalf("Release = %d, %v; want 0", n, err)
		}
		if got := status(t, s, 104).Token; got != "t2" {
			t.Errorf("seat 104 token = %q, want t2", got)
		}
		if _, v2, _ := s.States(ctx, show); v2 != v1 {
			t.Errorf("version moved on a no-op release")
		}
		if got := limit(t, s, "u2"); got != 3 {
			t.Errorf("u2 count = %d, want 3", got)
		}
	})
	t.Run("ReleaseFreesHeldAndSold", func(t *testing.T) {
		if n, err := s.Release(ctx, show, "t2", "u2", []int{104, 105, 106}); err != nil || n != 3 {
			t.Fatalf("Release held = %d, %v; want 3", n, err)
		}
		if n, err := s.Release(ctx, show, "t1", "u1", []int{101, 102}); err != nil || n != 2 {
			t.Fatalf("Release sold = %d, %v; want 2", n, err)
		}
		for _, id := range []int{101, 102, 104, 105, 106} {
			if got := status(t, s, id).Status; got != seatflow.SeatAvailable {
				t.Errorf("seat %d = %s, want AVAILABLE", id, got)
			}
		}
		if a, b := limit(t, s, "u1"), limit(t, s, "u2"); a != 0 || b != 0 {
			t.Errorf("counts = %d, %d; want 0, 0", a, b)
		}
	})
	t.Run("ReleaseIsIdempotentAndNeverNegative", func(t *testing.T) {
		if n, err := s.Release(ctx, show, "t2", "u2", []int{104, 105, 106}); err != nil || n != 0 {
			t.Fatalf("Release again = %d, %v; want 0", n, err)
		}
		if got := limit(t, s, "u2"); got != 0 {
			t.Errorf("u2 count = %d, want 0", got)
		}
	})
}

func TestRepairs(t *testing.T) {
	ctx := context.Background()
	hall := testHall(1, 6)
	t.Run("RestoreSellsFreeAndHeldSeats", func(t *testing.T) {
		s := newStore(t, hall)
		if err := hold(s, hall, "paid", "u1", 6, 101); err != nil {
			t.Fatal(err)
		}
		if err := hold(s, hall, "other", "u2", 6, 103); err != nil {
			t.Fatal(err)
		}
		n, conflicts, err := s.Restore(ctx, show, "paid", "u1", []int{101, 102, 103})
		if err != nil || n != 2 || fmt.Sprint(conflicts) != "[103]" {
			t.Fatalf("Restore = %d, %v, %v; want 2, [103]", n, conflicts, err)
		}
		for _, id := range []int{101, 102} {
			if got := status(t, s, id); got.Status != seatflow.SeatSold || got.Token != "paid" {
				t.Errorf("seat %d = %+v, want sold to paid", id, got)
			}
		}
		if got := status(t, s, 103).Token; got != "other" {
			t.Errorf("seat 103 token = %q, want other (left alone)", got)
		}
		if got := limit(t, s, "u1"); got != 2 {
			t.Errorf("u1 count = %d, want 2", got)
		}
		if n, _, _ := s.Restore(ctx, show, "paid", "u1", []int{101, 102}); n != 0 {
			t.Errorf("second Restore changed %d seats, want 0", n)
		}
	})
	t.Run("ReholdHoldsFreeSeatsOnly", func(t *testing.T) {
		s := newStore(t, hall)
		if err := hold(s, hall, "pending", "u1", 6, 101); err != nil {
			t.Fatal(err)
		}
		if err := hold(s, hall, "other", "u2", 6, 103); err != nil {
			t.Fatal(err)
		}
		before := status(t, s, 101).HeldAt
		at := time.UnixMilli(1_700_000_000_000)
		n, conflicts, err := s.Rehold(ctx, show, "pending", "u1", at, []int{101, 102, 103})
		if err != nil || n != 1 || fmt.Sprint(conflicts) != "[103]" {
			t.Fatalf("Rehold = %d, %v, %v; want 1, [103]", n, conflicts, err)
		}
		if got := status(t, s, 102); got.Status != seatflow.SeatHeld || got.Token != "pending" || !got.HeldAt.Equal(at) {
			t.Errorf("seat 102 = %+v, want held by pending since %v", got, at)
		}
		if got := status(t, s, 101); got.Status != seatflow.SeatHeld || !got.HeldAt.Equal(before) {
			t.Errorf("seat 101 = %+v, want still held since %v (left as it was)", got, before)
		}
		if got := status(t, s, 103).Token; got != "other" {
			t.Errorf("seat 103 token = %q, want other (left alone)", got)
		}
		if got := limit(t, s, "u1"); got != 2 {
			t.Errorf("u1 count = %d, want 2", got)
		}
		if n, _, _ := s.Rehold(ctx, show, "pending", "u1", at, []int{101, 102}); n != 0 {
			t.Errorf("second Rehold changed %d seats, want 0", n)
		}
	})
	t.Run("ReleaseOrphanWithoutUser", func(t *testing.T) {
		s := newStore(t, hall)
		if err := hold(s, hall, "orphan", "u1", 6, 101); err != nil {
			t.Fatal(err)
		}
		if n, err := s.Release(ctx, show, "orphan", "", []int{101}); err != nil || n != 1 {
			t.Fatalf("Release = %d, %v", n, err)
		}
		if got := limit(t, s, "u1"); got != 1 {
			t.Errorf("u1 count = %d, want 1 (left for the recount)", got)
		}
		if counts, err := s.Counts(ctx, show); err != nil || fmt.Sprint(counts) != "map[u1:1]" {
			t.Errorf("Counts = %v, %v; want map[u1:1]", counts, err)
		}
	})
}
