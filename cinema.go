package seatflow

// The longest name and address of a cinema, in characters (as their columns count).
const (
	MaxCinemaName    = 100
	MaxCinemaAddress = 300
)

// DefaultCinemaName names the cinema the migration makes for the halls that belong to no
// cinema (a database from before cinemas existed): its time zone is SEATFLOW_TIMEZONE.
const DefaultCinemaName = "SeatFlow"

// Cinema is one cinema of a chain: a Date of its showtimes is a day in its time zone (an
// IANA name such as Europe/Paris).
type Cinema struct {
	ID       int    `json:"id"`
	Name     string `json:"name"`
	TimeZone string `json:"timeZone"`
	Address  string `json:"address"`
}
