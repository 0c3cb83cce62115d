package faults

import (
	"context"
	"testing"
	"time"
)

// TestRedisLatency: every instance's Redis answers 50 ms late.
func TestRedisLatency(t *testing.T) {
	Run(t, Scenario{Order: 5, Name: "redis-latency", Plan: DefaultPlan(20 * time.Second),
		Fault:   "Redis latency 50 ms on every instance",
		Promise: "every request answered within its deadline, no INTERNAL, watchers stay current",
		Inject: func(ctx context.Context, e *Env, d time.Duration) error {
			for _, in := range e.Instances {
				if err := in.Redis.Latency(50, 0); err != nil {
					return err
				}
			}
			e.Applied()
			sleep(ctx, d)
			return nil
		}})
}

// TestRedisCutFromOneInstance: instance 0 loses Redis, the others keep it.
func TestRedisCutFromOneInstance(t *testing.T) {
	var liveAtCut []*Watcher
	Run(t, Scenario{Order: 6, Name: "redis-cut-one", Plan: DefaultPlan(15 * time.Second),
		Fault: "Redis unreachable from instance 0 only (its proxy down); the other instances keep theirs",
		Promise: "instance 0 refuses seat operations (SERVICE_UNAVAILABLE), its watchers are told (resync or close), " +
			"no stale seat map is served as current; the other instances serve normally",
		Inject: func(ctx context.Context, e *Env, d time.Duration) error {
			liveAtCut = nil
			for _, w := range watchersOf(e) {
				if w.Live() && w.On() == 0 {
					liveAtCut = append(liveAtCut, w)
				}
			}
			if err := e.Instances[0].Redis.Disable(); err != nil {
				return err
			}
			e.Applied()
			sleep(ctx, d)
			return nil
		},
		Extra: func(e *Env, w *Workload, ws []*Watcher, res *Result) {
			samples, on, off := w.Rec.Samples()
			var cut, cutRefused, servedCurrent, staleInWindow, other, otherOK int
			notRefused := map[string]int{}
			for _, s := range samples {
				if !during(s, on, off) || (s.Op != OpSeatMap && !changesSeats(s.Op)) {
					continue
				}
				if s.Instance != 0 {
					other++
					if s.Code != "SERVICE_UNAVAILABLE" {
						otherOK++
					}
					continue
				}
				cut++
				switch {
				case s.Code == "SERVICE_UNAVAILABLE":
					cutRefused++
				case s.Op == OpSeatMap && s.Code == CodeOK:
					// Served from what the instance knew: stale if the real map had moved
					// on before the request was sent.
					real, ok := e.VersionAt(s.Start)
					switch {
					case !ok || real <= s.Version:
						servedCurrent++
					case s.Start.Sub(on) < vouchWindow:
						staleInWindow++
						res.Note("instance 0 served seat map version %d %s after Redis was cut, before it noticed; the real version was %d",
							s.Version, s.Start.Sub(on).Round(time.Millisecond), real)
					default:
						res.violate("instance 0 served seat map version %d as current %s after Redis was cut; the real version was %d",
							s.Version, s.Start.Sub(on).Round(time.Millisecond), real)
					}
				default:
					notRefused[s.Op+" "+s.Code]++
				}
			}
			res.Note("seat operations and seat maps on instance 0 during the cut: %d of %d refused with SERVICE_UNAVAILABLE, "+
				"%d seat maps served still current and %d one version or more behind (both before the instance noticed), others %v",
				cutRefused, cut, servedCurrent, staleInWindow, notRefused)
			res.Note("seat operations and seat maps on the other instances during the cut: %d of %d not refused", otherOK, other)
			if len(notRefused) > 0 {
				res.violate("instance 0 answered seat operations without Redis: %v", notRefused)
			}
			if otherOK < other {
				res.violate("%d seat operations on instances that kept Redis answered SERVICE_UNAVAILABLE", other-otherOK)
			}
			told := 0
			for _, wt := range ws {
				if !contains(liveAtCut, wt) {
					continue
				}
				for _, ev := range wt.Events() {
					if ev.Instance == 0 && ev.Kind != "SNAPSHOT" && ev.At.After(on) && ev.At.Before(off) {
						told++
						break
					}
				}
			}
			res.Note("watchers of instance 0 told during the cut (subscription ended or closed): %d of %d", told, len(liveAtCut))
			if told < len(liveAtCut) {
				res.violate("%d watchers of instance 0 were not told that Redis was lost", len(liveAtCut)-told)
			}
		}})
}

// vouchWindow is how long after an instance loses Redis it may still answer seat maps
// from its live subscription without a Redis round trip: the hub vouches for a version
// while it heard its heartbeat within a second and none failed to go out (package live),
// so a write made through another instance in that window may not be in the answer. A
// stale answer later than this is a violation.
const vouchWindow = time.Second

func contains(ws []*Watcher, w *Watcher) bool {
	for _, x := range ws {
		if x == w {
			return true
		}
	}
	return false
}
