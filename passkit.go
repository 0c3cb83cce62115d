package seatflow

// Bounds of the PassKit web service's input (internal/passkit): what an Apple device sends
// to register for a pass's updates and to report its errors. Longer input is refused (400).
const (
	// MaxPassKitIDBytes bounds a device library identifier, a pass type identifier and a
	// serial number.
	MaxPassKitIDBytes = 128
	// MaxPushTokenBytes bounds a device's APNs push token (hex digits).
	MaxPushTokenBytes = 200
	// MaxPassKitBodyBytes bounds a registration's body.
	MaxPassKitBodyBytes = 1 << 10
	// MaxPassKitLogBytes bounds the body of a device's log message; MaxPassKitLogs the
	// messages it carries (each logged at most MaxPassKitLogLine bytes long).
	MaxPassKitLogBytes = 64 << 10
	MaxPassKitLogs     = 100
	MaxPassKitLogLine  = 1 << 10
	// MaxPassDevices is the most devices registered for one pass's updates: a customer's
	// phone and watch, a few more; one more is refused (429 RATE_LIMITED).
	MaxPassDevices = 10
)
