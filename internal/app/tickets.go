package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"seatflow/internal/tickets"
)

// wireTickets builds the tickets service over the instance's stores and hooks it into the
// pay, refund and cancellation paths. Without a secret (a command that signs nothing, in
// real mode) there is none.
func (a *App) wireTickets() error {
	secret := a.Config.TicketKeySecret
	if secret == "" && a.Config.Embedded() {
		var err error
		if secret, err = embeddedTicketSecret(a.Config.SQLitePath); err != nil {
			return err
		}
	}
	if secret == "" {
		return nil
	}
	ring, err := tickets.NewKeyring(a.DB, secret, a.Now)
	if err != nil {
		return fmt.Errorf("SEATFLOW_TICKET_KEY_SECRET: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ring.Ensure(ctx); err != nil {
		return err
	}
	a.Tickets = &tickets.Service{DB: a.DB, Keys: ring, RDB: a.Redis, RedisKeys: a.Keys, Now: a.Now, Log: a.Log}
	a.Booking.Tickets = a.Tickets
	a.Catalog.Tickets = a.Tickets
	return nil
}

// embeddedTicketSecret is embedded mode's ticket-key secret: kept in a file beside the
// SQLite database (made on first start, readable by its owner only), so tickets made
// before a restart still verify after it. An in-memory database gets a secret of its own.
func embeddedTicketSecret(sqlitePath string) (string, error) {
	path := sqliteFile(sqlitePath)
	if path == "" {
		return tickets.NewSecret(), nil
	}
	file := path + ".ticket-key-secret"
	if b, err := os.ReadFile(file); err == nil {
		return strings.TrimSpace(string(b)), nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("read the embedded ticket-key secret: %w", err)
	}
	secret := tickets.NewSecret()
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) { // another process made it first
		return embeddedTicketSecret(sqlitePath)
	} else if err != nil {
		return "", fmt.Errorf("keep the embedded ticket-key secret beside %s: %w", path, err)
	}
	defer f.Close()
	if _, err := f.WriteString(secret + "\n"); err != nil {
		return "", fmt.Errorf("write %s: %w", file, err)
	}
	return secret, nil
}

// sqliteFile is the file of embedded mode's SQLite database, "" for an in-memory one: what
// embedded mode generates is kept beside it.
func sqliteFile(sqlitePath string) string {
	path := strings.TrimPrefix(sqlitePath, "file:")
	if i := strings.IndexByte(path, '?'); i >= 0 {
		if strings.Contains(path[i:], "mode=memory") {
			return ""
		}
		path = path[:i]
	}
	if path == ":memory:" {
		return ""
	}
	return path
}
