package passkit

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"seatflow"
	"seatflow/internal/nodeid"
	"seatflow/internal/wallet"
)

// BasePath is where the web service answers: a pass's webServiceURL is the server's origin
// followed by it (Apple's devices add /v1/...).
const BasePath = "/passkit"

// Register adds the web service's endpoints to mux.
func (s *Service) Register(mux *http.ServeMux) {
	const reg = "/passkit/v1/devices/{device}/registrations/{passType}"
	mux.HandleFunc("POST "+reg+"/{serial}", s.handleRegister)
	mux.HandleFunc("DELETE "+reg+"/{serial}", s.handleUnregister)
	mux.HandleFunc("GET "+reg, s.handleSerials)
	mux.HandleFunc("GET /passkit/v1/passes/{passType}/{serial}", s.handlePass)
	mux.HandleFunc("POST /passkit/v1/log", s.handleLog)
}

// errNoPass is the error of a serial number naming no ticket.
var errNoPass = errors.New("no such pass")

// errTooManyDevices refuses one more device for a pass that has seatflow.MaxPassDevices:
// whoever holds a pass's token could otherwise register devices without end, each pushed
// at every change.
var errTooManyDevices = errors.New("too many devices for this pass")

// pass is the pass a request names: its pass type, serial number and ticket.
type pass struct {
	passType, serial string
	ticketID         int
}

// passOf reads the pass of r's path, answering for it when it is malformed (400) or of
// another pass type (404).
func (s *Service) passOf(w http.ResponseWriter, r *http.Request) (pass, bool) {
	p := pass{passType: r.PathValue("passType"), serial: r.PathValue("serial")}
	if !validID(p.passType) || !validID(p.serial) {
		fail(w, http.StatusBadRequest, seatflow.EBADREQUEST)
		return p, false
	}
	typ, parts, err := nodeid.Decode(p.serial)
	if err != nil || typ != nodeid.Ticket || len(parts) != 1 || nodeid.Encode(nodeid.Ticket, parts[0]) != p.serial {
		fail(w, http.StatusBadRequest, seatflow.EBADREQUEST)
		return p, false
	}
	p.ticketID = parts[0]
	if p.passType != s.PassTypeID {
		fail(w, http.StatusNotFound, seatflow.ENOTFOUND)
		return p, false
	}
	return p, true
}

// authorized says whether r carries the pass's authentication token ("Authorization:
// ApplePass <token>"), answering 401 when it does not.
func (s *Service) authorized(w http.ResponseWriter, r *http.Request, p pass) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "ApplePass ")
	want := wallet.AuthenticationToken(s.Key, p.serial)
	if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
		fail(w, http.StatusUnauthorized, seatflow.EUNAUTHENTICATED)
		return false
	}
	return true
}

// device reads the device library identifier of r's path, answering 400 when malformed.
func device(w http.ResponseWriter, r *http.Request) (string, bool) {
	d := r.PathValue("device")
	if !validID(d) {
		fail(w, http.StatusBadRequest, seatflow.EBADREQUEST)
		return "", false
	}
	return d, true
}

// handleRegister registers a device for a pass's updates: 201, or 200 when it was
// registered already.
func (s *Service) handleRegister(w http.ResponseWriter, r *http.Request) {
	d, ok := device(w, r)
	if !ok {
		return
	}
	p, ok := s.passOf(w, r)
	if !ok || !s.authorized(w, r, p) {
		return
	}
	var body struct {
		PushToken string `json:"pushToken"`
	}
	if !readJSON(w, r, seatflow.MaxPassKitBodyBytes, &body) {
		return
	}
	if !validPushToken(body.PushToken) {
		fail(w, http.StatusBadRequest, seatflow.EBADREQUEST)
		return
	}
	created, err := s.register(r.Context(), d, p.passType, p.serial, p.ticketID, body.PushToken)
	switch {
	case errors.Is(err, errNoPass):
		fail(w, http.StatusNotFound, seatflow.ENOTFOUND)
	case errors.Is(err, errTooManyDevices):
		fail(w, http.StatusTooManyRequests, seatflow.ERATELIMITED)
	case err != nil:
		s.internal(w, r, "register a device for a pass", err)
	case created:
		w.WriteHeader(http.StatusCreated)
	default:
		w.WriteHeader(http.StatusOK)
	}
}

// handleUnregister forgets a device's registration for a pass: 200.
func (s *Service) handleUnregister(w http.ResponseWriter, r *http.Request) {
	d, ok := device(w, r)
	if !ok {
		return
	}
	p, ok := s.passOf(w, r)
	if !ok || !s.authorized(w, r, p) {
		return
	}
	if err := s.unregister(r.Context(), d, p.passType, p.serial); err != nil {
		s.internal(w, r, "unregister a device", err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// handleSerials lists the serial numbers of a device's passes updated since the tag
// passesUpdatedSince (all of them without it): 200 with the list and the latest tag, or
// 204 when none was. The device library identifier is the device's own secret: the list
// needs no other authentication (Apple's reference).
func (s *Service) handleSerials(w http.ResponseWriter, r *http.Request) {
	d, ok := device(w, r)
	if !ok {
		return
	}
	passType := r.PathValue("passType")
	if !validID(passType) {
		fail(w, http.StatusBadRequest, seatflow.EBADREQUEST)
		return
	}
	var since int64
	raw := r.URL.Query().Get("passesUpdatedSince")
	if raw != "" {
		var err error
		if since, err = strconv.ParseInt(raw, 10, 64); err != nil || since < 0 {
			fail(w, http.StatusBadRequest, seatflow.EBADREQUEST)
			return
		}
	}
	serials, last, err := s.updatedSerials(r.Context(), d, passType, since, raw != "")
	if err != nil {
		s.internal(w, r, "list a device's updated passes", err)
		return
	}
	if len(serials) == 0 {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(struct {
		SerialNumbers []string `json:"serialNumbers"`
		LastUpdated   string   `json:"lastUpdated"`
	}{serials, FormatTag(last)})
}

// handlePass serves a pass's latest version with its Last-Modified time and its tag as
// ETag; 304 when the device's copy is current (If-None-Match, else If-Modified-Since), told
// from the stored times before the pass is made (and signed).
func (s *Service) handlePass(w http.ResponseWriter, r *http.Request) {
	p, ok := s.passOf(w, r)
	if !ok || !s.authorized(w, r, p) {
		return
	}
	tags, err := s.passTags(r.Context(), []int{p.ticketID})
	if err != nil {
		s.internal(w, r, "read a pass's tag", err)
		return
	}
	tag, ok := tags[p.ticketID]
	if !ok {
		fail(w, http.StatusNotFound, seatflow.ENOTFOUND)
		return
	}
	if notModified(r, tag) {
		w.Header().Set("ETag", etag(tag))
		w.Header().Set("Last-Modified", time.UnixMicro(tag).UTC().Format(http.TimeFormat))
		w.WriteHeader(http.StatusNotModified)
		return
	}
	if s.Passes == nil {
		fail(w, http.StatusServiceUnavailable, seatflow.EUNAVAILABLE)
		return
	}
	body, info, err := s.Passes.Pass(r.Context(), p.ticketID)
	if err != nil {
		if seatflow.ErrorCode(err) == seatflow.ENOTFOUND {
			fail(w, http.StatusNotFound, seatflow.ENOTFOUND)
			return
		}
		s.internal(w, r, "make a pass", err)
		return
	}
	w.Header().Set("Content-Type", "application/vnd.apple.pkpass")
	w.Header().Set("ETag", etag(Tag(info.LastUpdated)))
	w.Header().Set("Last-Modified", info.LastUpdated.UTC().Format(http.TimeFormat))
	w.Header().Set("Cache-Control", "no-cache")
	w.Write(body)
}

// notModified says whether r's copy of a pass of tag is current.
func notModified(r *http.Request, tag int64) bool {
	if inm := r.Header.Get("If-None-Match"); inm != "" {
		for _, e := range strings.Split(inm, ",") {
			if strings.TrimPrefix(strings.TrimSpace(e), "W/") == etag(tag) {
				return true
			}
		}
		return false
	}
	ims, err := http.ParseTime(r.Header.Get("If-Modified-Since"))
	// HTTP times have whole seconds: the pass's is cut to its second, as Last-Modified.
	return err == nil && !time.UnixMicro(tag).Truncate(time.Second).After(ims)
}

func etag(tag int64) string { return `"` + FormatTag(tag) + `"` }

// handleLog logs the messages a device reports (its errors with the web service): 200.
func (s *Service) handleLog(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Logs []string `json:"logs"`
	}
	if !readJSON(w, r, seatflow.MaxPassKitLogBytes, &body) {
		return
	}
	if len(body.Logs) > seatflow.MaxPassKitLogs {
		fail(w, http.StatusBadRequest, seatflow.EBADREQUEST)
		return
	}
	k, dropped := s.logs.take(s.Now(), len(body.Logs))
	if dropped > 0 {
		s.Log.WarnContext(r.Context(), "passkit device logs dropped", "messages", dropped, "per_minute", logsPerMinute)
	}
	for _, m := range body.Logs[:k] {
		if len(m) > seatflow.MaxPassKitLogLine {
			m = m[:seatflow.MaxPassKitLogLine]
		}
		s.Log.InfoContext(r.Context(), "passkit device log", "message", m)
	}
	w.WriteHeader(http.StatusOK)
}

// logsPerMinute bounds the device messages an instance logs a minute: the endpoint takes
// anyone's messages, the rest are dropped (their number logged in a later minute).
const logsPerMinute = 600

// logWindow counts the device messages logged in the current minute.
type logWindow struct {
	mu      sync.Mutex
	minute  time.Time
	logged  int
	dropped int
}

// take is how many of n messages may be logged now, and in a new minute how many the
// past ones dropped.
func (l *logWindow) take(now time.Time, n int) (k, dropped int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if m := now.Truncate(time.Minute); !m.Equal(l.minute) {
		l.minute, l.logged, dropped, l.dropped = m, 0, l.dropped, 0
	}
	k = min(n, logsPerMinute-l.logged)
	l.logged += k
	l.dropped += n - k
	return k, dropped
}

// readJSON reads r's JSON body of at most limit bytes into v, answering 400 when it is
// longer, malformed or followed by more.
func readJSON(w http.ResponseWriter, r *http.Request, limit int64, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	if err := dec.Decode(v); err != nil || dec.Decode(&struct{}{}) != io.EOF {
		fail(w, http.StatusBadRequest, seatflow.EBADREQUEST)
		return false
	}
	return true
}

// validID says whether s is a path segment the service takes: 1 to MaxPassKitIDBytes
// letters, digits, '.', '-' or '_' (Apple's identifiers, our serial numbers).
func validID(s string) bool {
	if len(s) == 0 || len(s) > seatflow.MaxPassKitIDBytes {
		return false
	}
	for _, c := range []byte(s) {
		if !isAlnum(c) && c != '.' && c != '-' && c != '_' {
			return false
		}
	}
	return true
}

// validPushToken says whether s is an APNs device token: 1 to MaxPushTokenBytes hex digits.
func validPushToken(s string) bool {
	if len(s) == 0 || len(s) > seatflow.MaxPushTokenBytes {
		return false
	}
	for _, c := range []byte(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// fail answers status with {"error": {"code": code}}.
func fail(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code}})
}

// internal logs err and answers 500.
func (s *Service) internal(w http.ResponseWriter, r *http.Request, what string, err error) {
	if !errors.Is(err, context.Canceled) {
		s.Log.ErrorContext(r.Context(), "passkit: "+what, "err", err)
	}
	fail(w, http.StatusInternalServerError, seatflow.EINTERNAL)
}
