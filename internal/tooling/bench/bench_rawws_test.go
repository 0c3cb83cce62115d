package bench

import (
	"bytes"
	"net"
	"testing"
)

// TestRawClientFrames: the counters' client parses server frames however the reads cut
// them: several in one read, one across reads (header included), a fragmented message,
// a 16-bit length; it answers a ping with a masked pong carrying the ping's payload.
func TestRawClientFrames(t *testing.T) {
	server, client := net.Pipe()
	defer server.Close()
	var got []string
	c := &rawClient{nc: client, onText: func(_ *rawClient, p []byte) { got = append(got, string(p)) }}
	frame := func(fin bool, opcode byte, payload string) []byte {
		b := []byte{opcode, 0}
		if fin {
			b[0] |= 0x80
		}
		if len(payload) < 126 {
			b[1] = byte(len(payload))
		} else {
			b[1] = 126
			b = append(b, byte(len(payload)>>8), byte(len(payload)))
		}
		return append(b, payload...)
	}
	long := string(bytes.Repeat([]byte("x"), 300))
	var stream []byte
	stream = append(stream, frame(true, 1, "one")...)
	stream = append(stream, frame(true, 1, "two")...)
	stream = append(stream, frame(true, 1, long)...)
	stream = append(stream, frame(false, 1, "fra")...)
	stream = append(stream, frame(true, 0, "gment")...)
	pongs := make(chan []byte, 1)
	go func() {
		b := make([]byte, 64)
		n, _ := server.Read(b)
		pongs <- b[:n]
	}()
	stream = append(stream, frame(true, 9, "hi")...)
	// Cut inside a header, inside a payload, and between frames.
	for _, cut := range [][2]int{{0, 1}, {1, 7}, {7, 12}, {12, 200}, {200, len(stream)}} {
		if !c.take(stream[cut[0]:cut[1]]) {
			t.Fatalf("take ended the client at %v", cut)
		}
	}
	want := []string{"one", "two", long, "fragment"}
	if len(got) != len(want) {
		t.Fatalf("messages: %d, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("message %d: %.20q, want %.20q", i, got[i], want[i])
		}
	}
	if p := <-pongs; !bytes.Equal(p, []byte{0x8A, 0x82, 0, 0, 0, 0, 'h', 'i'}) {
		t.Errorf("pong: % x", p)
	}
	if c.pending != nil {
		t.Errorf("%d bytes kept after whole frames", len(c.pending))
	}
	if c.take(frame(true, 8, "")) {
		t.Errorf("a close frame did not end the client")
	}
}
