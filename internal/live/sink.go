package live

import "seatflow"

// Sink is where one watcher's events go, in order: a SNAPSHOT, then DELTAs, and a fresh
// SNAPSHOT whenever a delta may have been missed. The hub calls it under its lock, so no
// method may block or call back into the hub.
type Sink interface {
	// Put queues ev for the client; false when there is no room: the client is slow, and
	// the hub will replace what it missed with a snapshot once it has room again.
	Put(ev *seatflow.SeatMapEvent) bool
	// Full reports whether Put would refuse an event now.
	Full() bool
	// Drop forgets the events queued but not yet sent: a snapshot supersedes them.
	Drop()
	// Close ends the stream: no event follows. The hub calls it once: with nil when the
	// watch's context ended (its client stopped it), with why (an error carrying a code)
	// when the server ends it: Redis lost, the instance shutting down. A client told why
	// subscribes again and resets its map from the SNAPSHOT that comes first.
	Close(why error)
}

// chanSink is a Sink on a buffered channel, for a consumer that reads a channel (the
// GraphQL executor's subscription resolver).
type chanSink struct{ ch chan *seatflow.SeatMapEvent }

func newChanSink(buffer int) *chanSink {
	return &chanSink{ch: make(chan *seatflow.SeatMapEvent, buffer)}
}

func (s *chanSink) Put(ev *seatflow.SeatMapEvent) bool {
	select {
	case s.ch <- ev: // only the hub sends: a free slot stays free until this send
		return true
	default:
		return false
	}
}

func (s *chanSink) Full() bool { return len(s.ch) == cap(s.ch) }

// Drop empties the channel without blocking: the client may be taking from it meanwhile.
func (s *chanSink) Drop() {
	for {
		select {
		case <-s.ch:
		default:
			return
		}
	}
}

// Close closes the channel: the executor ends the subscription with complete, which the
// clients the project ships also answer by subscribing again.
func (s *chanSink) Close(error) { close(s.ch) }

// discard is the sink of a watcher whose watch failed before it began.
type discard struct{}

func (discard) Put(*seatflow.SeatMapEvent) bool { return true }
func (discard) Full() bool                      { return false }
func (discard) Drop()                           {}
func (discard) Close(error)                     {}
