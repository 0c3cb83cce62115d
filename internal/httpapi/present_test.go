package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"seatflow"
	"seatflow/graph"
	"seatflow/internal/nodeid"
)

// seatflowCodes reads every error code the domain declares (the E* constants of the root
// package's error.go), so a code added there is presented by this test too.
func seatflowCodes(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "../../error.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			for i, name := range v.Names {
				if !strings.HasPrefix(name.Name, "E") || i >= len(v.Values) {
					continue
				}
				if lit, ok := v.Values[i].(*ast.BasicLit); ok {
					code, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					codes = append(codes, code)
				}
			}
		}
	}
	if len(codes) < 14 {
		t.Fatalf("read %d codes from error.go (%v), want every E* constant", len(codes), codes)
	}
	return codes
}

// TestPresentError: the presenter gives every domain code to extensions.code with its
// message, keeps gqlgen's own codes (BAD_REQUEST when there is none), classifies a
// database error, and answers anything else INTERNAL "internal error", logging what it
// hides.
func TestPresentError(t *testing.T) {
	schema := graph.NewExecutableSchema(graph.Config{Resolvers: &graph.Resolver{}}).Schema()
	type row struct {
		name    string
		err     error
		code    string
		message string
		ext     map[string]any // extensions besides code
		log     string         // the level the error is logged at ("" = not logged)
	}
	var cases []row
	for _, code := range seatflowCodes(t) {
		log := ""
		if code == seatflow.EUNAVAILABLE {
			log = "WARN"
		}
		cases = append(cases, row{name: code, err: seatflow.Errorf(code, "the %s case", code), code: code,
			message: "the " + code + " case", log: log})
	}
	secret := errors.New("dial tcp 10.9.8.7:3306: access denied for user 'seatflow'@'secret-host'")
	cases = append(cases,
		row{name: "WrappedKeepsItsCodeAndMessage", err: fmt.Errorf("hold seats: %w", seatflow.Errorf(seatflow.ENOTFOUND, "no such showtime")),
			code: seatflow.ENOTFOUND, message: "no such showtime"},
		row{name: "ExtensionsKept", err: &seatflow.Error{Code: seatflow.ERATELIMITED, Message: "slow down", Extensions: map[string]any{"retryAfterMs": 1500}},
			code: seatflow.ERATELIMITED, message: "slow down", ext: map[string]any{"retryAfterMs": 1500}},
		row{name: "UnavailableHidesItsCause", err: seatflow.Unavailable("database", secret), code: seatflow.EUNAVAILABLE,
			message: "service temporarily unavailable, try again shortly", log: "WARN"},
		row{name: "UnclassifiedDatabaseErrorClassified", err: fmt.Errorf("find order: %w", &mysql.MySQLError{Number: 1213, Message: "Deadlock found"}),
			code: seatflow.EUNAVAILABLE, message: "service temporarily unavailable, try again shortly", log: "WARN"},
		row{name: "UnknownIsInternal", err: secret, code: seatflow.EINTERNAL, message: "internal error", log: "ERROR"},
		row{name: "WrappedUnknownIsInternal", err: fmt.Errorf("pay order 7: %w", secret), code: seatflow.EINTERNAL, message: "internal error", log: "ERROR"},
		row{name: "PanicIsInternal", err: recoverPanic(slog.New(slog.DiscardHandler))(context.Background(), secret.Error()),
			code: seatflow.EINTERNAL, message: "internal error", log: "ERROR"},
		row{name: "ClientWentAwayIsQuiet", err: fmt.Errorf("read showtime: %w", context.Canceled), code: seatflow.EINTERNAL,
			message: "internal error", log: "DEBUG"},
		row{name: "GraphQLErrorKeepsItsCode", err: &gqlerror.Error{Message: "bad syntax", Extensions: map[string]any{"code": "GRAPHQL_PARSE_FAILED"}},
			code: "GRAPHQL_PARSE_FAILED", message: "bad syntax"},
		row{name: "GraphQLErrorWithoutCodeIsBadRequest", err: &gqlerror.Error{Message: "bad request"}, code: seatflow.EBADREQUEST, message: "bad request"},
		row{name: "GraphQLErrorAroundADomainError", err: &gqlerror.Error{Message: "x", Err: seatflow.Errorf(seatflow.EFORBIDDEN, "admins only")},
			code: seatflow.EFORBIDDEN, message: "admins only"},
		row{name: "GraphQLErrorAroundAnUnknownError", err: &gqlerror.Error{Message: secret.Error(), Err: secret},
			code: seatflow.EINTERNAL, message: "internal error", log: "ERROR"},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var logs bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			got := presentError(log, schema)(context.Background(), c.err)
			if got.Message != c.message {
				t.Errorf("message = %q, want %q", got.Message, c.message)
			}
			want := map[string]any{"code": c.code}
			for k, v := range c.ext {
				want[k] = v
			}
			if fmt.Sprint(got.Extensions) != fmt.Sprint(want) {
				t.Errorf("extensions = %v, want %v", got.Extensions, want)
			}
			if shown := fmt.Sprintf("%s %v", got.Message, got.Extensions); strings.Contains(shown, "secret-host") {
				t.Errorf("answer %q leaks the hidden error", shown)
			}
			logged := logs.String()
			switch {
			case c.log == "" && logged != "":
				t.Errorf("logged %q, want nothing", logged)
			case c.log != "" && !strings.Contains(logged, "level="+c.log):
				t.Errorf("logged %q, want level %s", logged, c.log)
			case c.log == "ERROR" && !strings.Contains(logged, "secret-host") && !strings.Contains(logged, "panic in resolver"):
				t.Errorf("logged %q, want the hidden error", logged)
			}
		})
	}
}

// TestPresentErrorOverHTTP: through the real handler, a domain error a resolver returns
// reaches the client with its code, and a resolver that panics is INTERNAL without a word
// of the panic.
func TestPresentErrorOverHTTP(t *testing.T) {
	a := newAPI(t, nil)
	t.Run("DomainErrorWithItsCode", func(t *testing.T) {
		got := a.query(t, `mutation($m: ID!) { setMovieStatus(id: $m, status: LISTED) { id } }`, map[string]any{"m": a.movieID()}, nil)
		wantAnswer(t, got, http.StatusOK, seatflow.EUNAUTHENTICATED)
		if len(got.Errors) != 1 || got.Errors[0].Message != "sign in: this operation needs a bearer token" {
			t.Errorf("errors = %s, want the domain message", got.raw)
		}
	})
	t.Run("PanicIsInternal", func(t *testing.T) {
		// A resolver that panics: the booking service is missing from the test API.
		token, err := a.Auth.Issue("present-user", "customer", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		got := a.query(t, `mutation($in: HoldSeatsInput!) { holdSeats(input: $in) { id } }`,
			map[string]any{"in": map[string]any{"showtimeId": a.showtimeID(), "seatIds": []string{nodeid.Encode(nodeid.Seat, 1)}, "idempotencyKey": "k"}},
			http.Header{"Authorization": {"Bearer " + token}})
		wantAnswer(t, got, http.StatusOK, seatflow.EINTERNAL)
		if len(got.Errors) != 1 || got.Errors[0].Message != "internal error" {
			t.Errorf("errors = %s, want one \"internal error\"", got.raw)
		}
		if body := string(got.raw); strings.Contains(body, "nil pointer") || strings.Contains(body, "goroutine") {
			t.Errorf("answer %s shows the panic", body)
		}
	})
}
