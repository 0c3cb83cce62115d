// Package cli holds what SeatFlow's command lines share: the table of subcommands and
// their dispatch, help that goes to stdout with exit status 0, usage errors (exit status
// 2) that name the flag or variable at fault, and the JSON logger. It knows no command.
package cli

import (
	"errors"
	"fmt"
	"log/slog"
	"os"

	"seatflow/internal/telemetry"
)

// UsageError is a mistake in a command line or in the configuration; the command exits
// with status 2.
type UsageError struct{ Msg string }

func (e UsageError) Error() string { return e.Msg }

// Usagef returns a UsageError with a formatted message.
func Usagef(format string, args ...any) error {
	return UsageError{Msg: fmt.Sprintf(format, args...)}
}

// Help is what a command returns when it was asked for help (-h, --help): Flags is the
// list of its flags; Dispatch prints it under the command's description on stdout and
// the command exits with status 0.
type Help struct{ Flags string }

func (h Help) Error() string { return "help requested" }

// ExitCode is the exit status for err: 0 for nil or Help, 2 for a usage error, 1 for
// any other.
func ExitCode(err error) int {
	var u UsageError
	var h Help
	switch {
	case err == nil, errors.As(err, &h):
		return 0
	case errors.As(err, &u):
		return 2
	}
	return 1
}

// Logger returns a JSON logger on stderr at level (debug, info, warn, error; info when
// it does not parse).
func Logger(level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(telemetry.LogHandler(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: l})))
}
