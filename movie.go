package seatflow

// MovieStatus says whether a movie is shown in the catalog and may get new showtimes.
type MovieStatus string

// Movie statuses.
const (
	MovieListed   MovieStatus = "LISTED"
	MovieDelisted MovieStatus = "DELISTED"
)

// Values lists every movie status (ent builds its enum column from it).
func (MovieStatus) Values() []string { return []string{string(MovieListed), string(MovieDelisted)} }

// Valid reports whether s is a known status.
func (s MovieStatus) Valid() bool { return s == MovieListed || s == MovieDelisted }

// The longest texts of a movie, in characters: its columns hold as many (utf8mb4
// varchar(n) counts characters), and the catalog refuses longer input.
const (
	MaxMovieTitle  = 200
	MaxMovieRating = 20
	MaxPosterURL   = 500
)

// Movie is a film the cinema lists.
type Movie struct {
	ID              int         `json:"id"`
	Title           string      `json:"title"`
	Synopsis        string      `json:"synopsis"`
	DurationMinutes int         `json:"durationMinutes"`
	Rating          string      `json:"rating"`
	Genres          []string    `json:"genres"`
	PosterURL       string      `json:"posterUrl"`
	Status          MovieStatus `json:"status"`
}
