//go:build race

package app

// raceDetector: the race detector keeps shadow memory of every allocation, several times
// its size, in the process' resident set.
const raceDetector = true
