// Package cli holds what SeatFlow's command lines share: the usage error (exit status 2),
// the exit code of an error, and the JSON logger. It knows no command.
package cli

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
)

// UsageError is a mistake in a command line; the command exits with status 2.
type UsageError struct{ Msg string }

func (e UsageError) Error() string { return e.Msg }

// Usagef returns a UsageError with a formatted message.
func Usagef(format string, args ...any) error {
	return UsageError{Msg: fmt.Sprintf(format, args...)}
}

// ExitCode is the exit status for err: 2 for a usage error, 1 for any other, 0 for nil.
func ExitCode(err error) int {
	var u UsageError
	switch {
	case err == nil:
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
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: l}))
}
