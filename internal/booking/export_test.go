package booking

// InFlightMarker is the idempotency marker a request writes while it runs, for the tests
// of package booking_test that put a key in that state.
const InFlightMarker = inFlight
