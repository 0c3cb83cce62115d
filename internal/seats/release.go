//go:build !seatflow_bug_release

package seats

// releasable is the seats a release frees: every one it was given. Built with the tag
// seatflow_bug_release, release_bug.go drops one instead: the bug the fault suite's
// linearizability checker must catch (internal/tooling/faults/bug_release_test.go).
func releasable(seatIDs []int) []int { return seatIDs }
