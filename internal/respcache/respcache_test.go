package respcache

import (
	"strings"
	"testing"
	"time"
)

func entryOf(body string, until time.Time, tags ...string) *entry {
	return &entry{data: []byte(body), tags: tags, until: until}
}

func TestStore(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	s := New(1<<10, func() time.Time { return now })
	later := now.Add(time.Minute)

	t.Run("DropByTag", func(t *testing.T) {
		s.put("a", s.generation(), entryOf("A", later, "movie:1", "hall:1"))
		s.put("b", s.generation(), entryOf("B", later, "movie:2"))
		s.Drop([]string{"hall:1"})
		if _, ok := s.get("a"); ok {
			t.Fatal("a response tagged hall:1 survived its drop")
		}
		if _, ok := s.get("b"); !ok {
			t.Fatal("an untagged response was dropped")
		}
		s.Drop(nil)
		if s.lru.Len() != 0 {
			t.Fatalf("%d responses left after a flush", s.lru.Len())
		}
	})
	t.Run("DropWhileBuildingStopsThePut", func(t *testing.T) {
		gen := s.generation()
		s.Drop([]string{"movie:3"}) // a key this response never read: still conservative
		if s.put("c", gen, entryOf("C", later, "movie:1")) {
			t.Fatal("a response built across a drop was stored")
		}
		if !s.put("c", s.generation(), entryOf("C", later, "movie:1")) {
			t.Fatal("a response built after the drop was refused")
		}
	})
	t.Run("Expiry", func(t *testing.T) {
		s.put("d", s.generation(), entryOf("D", now.Add(time.Second), "movie:4"))
		now = now.Add(time.Second)
		if _, ok := s.get("d"); ok {
			t.Fatal("served at its expiry")
		}
		if s.put("e", s.generation(), entryOf("E", now, "movie:4")) {
			t.Fatal("stored an already expired response")
		}
	})
	t.Run("BytesBoundAndReplace", func(t *testing.T) {
		s.Drop(nil)
		big := strings.Repeat("x", 400)
		for _, k := range []string{"1", "2", "3"} {
			s.put(k, s.generation(), entryOf(big, later, "movie:"+k))
		}
		if _, ok := s.get("1"); ok || s.lru.Len() != 2 || s.bytes != 800 {
			t.Fatalf("after 1200 bytes into 1024: len %d, bytes %d, oldest kept %v", s.lru.Len(), s.bytes, ok)
		}
		s.put("3", s.generation(), entryOf("short", later, "movie:9"))
		if s.bytes != 405 || len(s.byTag["movie:3"]) != 0 || len(s.byTag["movie:9"]) != 1 {
			t.Fatalf("replacing an entry: bytes %d, tags %v", s.bytes, s.byTag)
		}
		if s.put("big", s.generation(), entryOf(strings.Repeat("y", 2000), later, "movie:1")) {
			t.Fatal("stored a response larger than the store")
		}
	})
}
