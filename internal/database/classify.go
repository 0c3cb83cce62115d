package database

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"net"
	"strings"

	"github.com/go-sql-driver/mysql"

	"seatflow"
	"seatflow/ent"
)

// MySQL error numbers SeatFlow acts on. No other package knows them.
const (
	errTooManyConnections = 1040
	errUserConnections    = 1203
	errLockWaitTimeout    = 1205
	errDeadlock           = 1213
)

// Classify turns a database error into one a caller and a client can act on, keeping the
// cause in the chain: a record not found is NOT_FOUND, an ent validation failure
// BAD_USER_INPUT, and the database refusing or losing work (too many connections, a
// lock wait timeout, a deadlock, a dropped connection, a deadline, a transaction that its
// deadline rolled back before the commit) SERVICE_UNAVAILABLE,
// since a retry may succeed. Anything else, an *seatflow.Error already in the chain, and
// nil are returned unchanged. Constraint violations stay as they are: what they mean is
// the caller's to say (Conflict).
func Classify(err error) error {
	var appErr *seatflow.Error
	switch {
	case err == nil, errors.As(err, &appErr):
		return err
	case ent.IsNotFound(err):
		return seatflow.Errorf(seatflow.ENOTFOUND, "%s", strings.TrimPrefix(err.Error(), "ent: "))
	case ent.IsValidationError(err):
		return seatflow.Errorf(seatflow.EINVALID, "%s", err.Error())
	case unavailable(err):
		return seatflow.Unavailable("database", err)
	}
	return err
}

// Deadlock reports whether MySQL ended err's transaction as a deadlock: nothing of it was
// written, and running it again may succeed.
func Deadlock(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == errDeadlock
}

func unavailable(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case errTooManyConnections, errUserConnections, errLockWaitTimeout, errDeadlock:
			return true
		}
		return false
	}
	var ne net.Error
	// sql.ErrTxDone from a commit: database/sql rolled the transaction back when its
	// context ended (SeatFlow's transactions commit once).
	return errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, sql.ErrTxDone) || errors.As(err, &ne)
}

// Conflict reports whether a write failed because another transaction has (or is
// committing) the same unique key: a constraint violation, or the deadlock MySQL may
// resolve two such concurrent inserts with.
func Conflict(err error) bool {
	var me *mysql.MySQLError
	return ent.IsConstraintError(err) || (errors.As(err, &me) && me.Number == errDeadlock)
}
