package main

import (
	"context"
	"io"

	"seatflow/internal/app"
	"seatflow/internal/cli"
)

// program is the seatflow binary's command table; the commands live in internal/app.
var program = &cli.Program{
	Name:    "seatflow",
	About:   "SeatFlow: a cinema ticketing GraphQL API (live seat maps, holds, payments).",
	Default: "serve",
	Commands: []cli.Command{
		{Name: "serve", Usage: "[flags]", Summary: "run the API server",
			Doc: "With no SEATFLOW_MYSQL_DSN and SEATFLOW_REDIS_URL it runs in embedded mode: SQLite and an\n" +
				"in-process Redis, demo data, demo tokens printed at start.",
			Run: app.ServeCommand},
		{Name: "migrate", Usage: "[flags]", Summary: "create or update the database schema, then exit",
			Doc: "Several instances may migrate at once: they take turns under a database lock.\n" +
				"It reads the same SEATFLOW_* environment as serve.",
			Run: app.MigrateCommand},
		{Name: "seed-demo", Usage: "[flags]", Summary: "add the demo catalog and this week's demo showtimes where missing",
			Doc: "The catalog is added to a database without movies; showtimes are added to the days from\n" +
				"today to six days ahead (in SEATFLOW_TIMEZONE) that have none. Orders are never touched.",
			Run: app.SeedDemoCommand},
		{Name: "token", Usage: app.TokenUsage, Summary: "print a bearer token for a user",
			Doc: "The token is signed with SEATFLOW_JWT_SECRET, which must be the server's. Without it the\n" +
				"command signs with the embedded demo secret only when no SEATFLOW_MYSQL_DSN or\n" +
				"SEATFLOW_REDIS_URL is set (such a token works only with an embedded server, make run).",
			Run: app.TokenCommand},
		{Name: "ticket-keys", Usage: "rotate|list [flags]", Summary: "add a key that signs new tickets, or list the published keys",
			Doc: "rotate: every instance signs new tickets with the new key within 30s; tickets signed\n" +
				"before keep verifying, and their key stays published (GET /.well-known/ticket-keys)\n" +
				"until the last of them has expired. It needs SEATFLOW_TICKET_KEY_SECRET, the server's.",
			Run: app.TicketKeysCommand},
		{Name: "reconcile", Usage: "--once [flags]", Summary: "repair drift between Redis and MySQL once and print the report",
			Doc: "Needs the deployment's MySQL and Redis (not embedded mode).",
			Run: app.ReconcileCommand},
		{Name: "verify", Usage: "[flags]", Summary: "check that Redis and MySQL agree; exit status 1 on any violation",
			Doc: "Needs the deployment's MySQL and Redis (not embedded mode).",
			Run: app.VerifyCommand},
	},
	Footer: "Every flag of a setting is also an environment variable: -hold-ttl 10m is SEATFLOW_HOLD_TTL=10m.",
}

// Run runs the command in args.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return program.Run(ctx, args, stdout, stderr)
}
