package googlewallet

// The JSON of the Google Wallet API's objects a link carries (only the fields SeatFlow
// fills); the names are Google's.

// Payload is a link's payload: the classes and objects to save.
type Payload struct {
	EventTicketClasses []EventTicketClass  `json:"eventTicketClasses"`
	EventTicketObjects []EventTicketObject `json:"eventTicketObjects"`
}

// EventTicketClass is what every ticket of one showtime shares.
type EventTicketClass struct {
	ID string `json:"id"`
	// EventID groups a customer's saved tickets of one event: the class's id.
	EventID      string          `json:"eventId"`
	IssuerName   string          `json:"issuerName"`
	EventName    LocalizedString `json:"eventName"`
	Venue        *Venue          `json:"venue,omitempty"`
	DateTime     *DateTime       `json:"dateTime,omitempty"`
	ReviewStatus string          `json:"reviewStatus"`
}

// Venue is where the event takes place.
type Venue struct {
	Name    LocalizedString `json:"name"`
	Address LocalizedString `json:"address"`
}

// DateTime is when the doors open, the event starts and ends (ISO 8601 with the offset of
// the cinema's time zone).
type DateTime struct {
	DoorsOpen string `json:"doorsOpen,omitempty"`
	Start     string `json:"start"`
	End       string `json:"end"`
}

// EventTicketObject is one ticket.
type EventTicketObject struct {
	ID                string          `json:"id"`
	ClassID           string          `json:"classId"`
	State             string          `json:"state"`
	SeatInfo          *SeatInfo       `json:"seatInfo,omitempty"`
	TicketType        LocalizedString `json:"ticketType"`
	Barcode           Barcode         `json:"barcode"`
	ValidTimeInterval *TimeInterval   `json:"validTimeInterval,omitempty"`
}

// SeatInfo is the ticket's seat.
type SeatInfo struct {
	Seat LocalizedString `json:"seat"`
	Row  LocalizedString `json:"row"`
}

// Barcode is what the door scans.
type Barcode struct {
	Type  string `json:"type"`
	Value string `json:"value"`
}

// TimeInterval is when the ticket is valid.
type TimeInterval struct {
	Start DateTimeValue `json:"start"`
	End   DateTimeValue `json:"end"`
}

// DateTimeValue is an instant (ISO 8601).
type DateTimeValue struct {
	Date string `json:"date"`
}

// LocalizedString is a text in its default language.
type LocalizedString struct {
	DefaultValue TranslatedString `json:"defaultValue"`
}

// TranslatedString is a text and its language.
type TranslatedString struct {
	Language string `json:"language"`
	Value    string `json:"value"`
}

func localized(s string) LocalizedString {
	return LocalizedString{DefaultValue: TranslatedString{Language: "en", Value: s}}
}
