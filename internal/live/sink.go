package live

import "seatflow"

// Sink is where one watcher's events go, in order: a SNAPSHOT, then DELTAs, and a fresh
// SNAPSHOT whenever a delta may have been missed. The hub calls it under the show's
// lock, so no method may block or call back into the hub (Watcher.Next excepted).
type Sink interface {
	// Put queues a SNAPSHOT for the client; false when there is no room (the hub reads
	// another once the client has taken what waits).
	Put(ev *seatflow.SeatMapEvent) bool
	// Due tells the sink that w has a DELTA waiting: the sink takes it with w.Next when
	// it can write it, as late as it likes (what came meanwhile is merged into it). It
	// is told again only once it has called Next. False when it cannot take it now (no
	// room): the hub offers it again a moment later.
	Due(w *Watcher) bool
	// Full reports whether Put would refuse an event now.
	Full() bool
	// Drop forgets the events queued but not yet sent, and a DELTA it was told of: a
	// snapshot supersedes them.
	Drop()
	// Close ends the stream: no event follows. The hub calls it once: with nil when the
	// watch's context ended (its client stopped it), with why (an error carrying a code)
	// when the server ends it: Redis lost, the instance shutting down. A client told why
	// subscribes again and resets its map from the SNAPSHOT that comes first.
	Close(why error)
}

// chanSink is a Sink on a buffered channel, for a consumer that reads a channel (the
// GraphQL executor's subscription resolver). It takes a DELTA as soon as it is told of
// it, if the channel has room.
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

func (s *chanSink) Due(w *Watcher) bool {
	if s.Full() {
		return false
	}
	if ev := w.Next(); ev != nil {
		s.ch <- ev // a free slot: only the hub sends, under the show's lock
	}
	return true
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
func (discard) Due(*Watcher) bool               { return true }
func (discard) Full() bool                      { return false }
func (discard) Drop()                           {}
func (discard) Close(error)                     {}
