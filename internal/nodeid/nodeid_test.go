package nodeid

import (
	"encoding/base64"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	for _, c := range []struct {
		typ   string
		parts []int
	}{{Movie, []int{1}}, {Showtime, []int{123456789}}, {SeatState, []int{7, 42}}} {
		id := Encode(c.typ, c.parts...)
		typ, parts, err := Decode(id)
		if err != nil || typ != c.typ || len(parts) != len(c.parts) || parts[0] != c.parts[0] || parts[len(parts)-1] != c.parts[len(c.parts)-1] {
			t.Fatalf("%s %v → %q → %s %v %v", c.typ, c.parts, id, typ, parts, err)
		}
	}
	if Encode(Movie, 1) == Encode(Showtime, 1) {
		t.Fatal("a movie and a showtime share an id")
	}
	if got := Encode(Showtime, 1); got != "U2hvd3RpbWU6MQ" {
		t.Fatalf("Showtime:1 = %q: the id format changed (clients keep ids)", got)
	}
	// Padding and the standard alphabet are accepted.
	if typ, parts, err := Decode(base64.StdEncoding.EncodeToString([]byte("Order:9"))); err != nil || typ != Order || parts[0] != 9 {
		t.Fatalf("padded id: %s %v %v", typ, parts, err)
	}
}

func TestMalformed(t *testing.T) {
	for _, id := range []string{"", "1", "42", "!!!", base64.RawURLEncoding.EncodeToString([]byte("Movie")),
		base64.RawURLEncoding.EncodeToString([]byte("Movie:")), base64.RawURLEncoding.EncodeToString([]byte("Movie:0")),
		base64.RawURLEncoding.EncodeToString([]byte("Movie:-1")), base64.RawURLEncoding.EncodeToString([]byte("Movie:01")),
		base64.RawURLEncoding.EncodeToString([]byte(":1")), base64.RawURLEncoding.EncodeToString([]byte("Movie:1x")),
		string(make([]byte, 200))} {
		if _, _, err := Decode(id); err == nil {
			t.Errorf("Decode(%q) accepted", id)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(Encode(Showtime, 1))
	f.Add("U2hvd3RpbWU6MQ==")
	f.Fuzz(func(t *testing.T, id string) {
		typ, parts, err := Decode(id)
		if err != nil {
			return
		}
		if again, _, err := Decode(Encode(typ, parts...)); err != nil || again != typ {
			t.Fatalf("%q decodes to %s %v, which does not encode back", id, typ, parts)
		}
	})
}
