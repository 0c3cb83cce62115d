//go:build seatflow_bug_release

package seats

// releasable drops the last seat of every release: a bug on purpose, built only with the
// tag seatflow_bug_release, for the test that shows the fault suite's linearizability
// checker catches a release that skips a seat (internal/tooling/faults/bug_release_test.go).
// Never built into the server.
func releasable(seatIDs []int) []int { return seatIDs[:len(seatIDs)-1] }
