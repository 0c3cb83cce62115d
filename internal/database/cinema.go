package database

import (
	"context"
	"fmt"

	"seatflow"
	"seatflow/ent"
	"seatflow/ent/cinema"
	"seatflow/ent/hall"
)

// DefaultCinema is the cinema the migration puts halls without a cinema into: a database
// from before cinemas existed has one cinema, whose days were counted in SEATFLOW_TIMEZONE.
type DefaultCinema struct {
	Name     string // seatflow.DefaultCinemaName when empty
	TimeZone string // "UTC" when empty
}

// assignDefaultCinema makes the default cinema when no cinema exists (a new database too:
// a hall created without a cinema joins it), and puts every hall without a cinema into
// the oldest cinema (the default one). It is idempotent: a migrated database has a cinema
// and no hall without one, and is left as it is.
// Migrate runs it under the migration lock, so two instances never make two defaults.
func assignDefaultCinema(ctx context.Context, client *ent.Client, def DefaultCinema) error {
	c, err := client.Cinema.Query().Order(ent.Asc(cinema.FieldID)).First(ctx)
	if ent.IsNotFound(err) {
		name, zone := def.Name, def.TimeZone
		if name == "" {
			name = seatflow.DefaultCinemaName
		}
		if zone == "" {
			zone = "UTC"
		}
		c, err = client.Cinema.Create().SetName(name).SetTimeZone(zone).Save(ctx)
	}
	if err != nil {
		return fmt.Errorf("migrate: the default cinema: %w", err)
	}
	if _, err := client.Hall.Update().Where(hall.CinemaIDIsNil()).SetCinemaID(c.ID).Save(ctx); err != nil {
		return fmt.Errorf("migrate: halls into the default cinema: %w", err)
	}
	return nil
}
