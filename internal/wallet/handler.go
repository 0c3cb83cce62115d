package wallet

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"seatflow"
	"seatflow/internal/auth"
	"seatflow/internal/nodeid"
)

// PassRoute is the pattern of a ticket's pass.
const PassRoute = "GET /tickets/{ticketId}/pass.pkpass"

// Handler serves PassRoute: the pass of the ticket whose API id is ticketId, to its
// owner's bearer token or to a signed link (Link's exp and sig). Someone else's ticket, or
// none, is 404 NOT_FOUND; a bad or expired link, or no token, 401 UNAUTHENTICATED; Apple
// passes off, 501 WALLET_UNAVAILABLE. A revoked ticket's pass is served, voided.
// Last-Modified is the pass's LastUpdated, and If-Modified-Since is honoured.
func (s *Service) Handler(tokens *auth.Authenticator, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.Enabled() {
			writeError(w, http.StatusNotImplemented, unavailable())
			return
		}
		typ, parts, err := nodeid.Decode(r.PathValue("ticketId"))
		if err != nil || typ != nodeid.Ticket || len(parts) != 1 {
			writeError(w, http.StatusNotFound, seatflow.Errorf(seatflow.ENOTFOUND, "no such ticket"))
			return
		}
		id := parts[0]
		q := r.URL.Query()
		var owner string // the caller who must own the ticket; "" for a signed link
		if q.Has("sig") || q.Has("exp") {
			if !s.validLink(SerialNumber(id), q.Get("exp"), q.Get("sig")) {
				writeError(w, http.StatusUnauthorized, seatflow.Errorf(seatflow.EUNAUTHENTICATED,
					"the pass link is invalid or expired: ask for a new one (Ticket.applePassUrl)"))
				return
			}
		} else {
			token := auth.BearerToken(r.Header.Get("Authorization"))
			if token == "" {
				writeError(w, http.StatusUnauthorized, seatflow.Errorf(seatflow.EUNAUTHENTICATED,
					"sign in (Authorization: Bearer) or use the ticket's signed link (Ticket.applePassUrl)"))
				return
			}
			u, err := tokens.Verify(token)
			if err != nil {
				writeError(w, http.StatusUnauthorized, err)
				return
			}
			owner = u.ID
		}
		t, err := s.Tickets.Ticket(r.Context(), id)
		if err == nil && (t == nil || (owner != "" && t.UserID != owner)) {
			err = seatflow.Errorf(seatflow.ENOTFOUND, "no such ticket")
		}
		if err == nil && s.notModified(r, t) {
			w.WriteHeader(http.StatusNotModified) // before any signature: a phone's repeat costs a read
			return
		}
		var b []byte
		var info *PassInfo
		if err == nil {
			b, info, err = s.pass(r.Context(), t)
		}
		if err != nil {
			status := statusOf(err)
			if status == http.StatusInternalServerError {
				log.Error("wallet: make a pass", "ticket", id, "err", err)
			}
			writeError(w, status, err)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "application/vnd.apple.pkpass")
		h.Set("Content-Disposition", `attachment; filename="ticket.pkpass"`)
		h.Set("Cache-Control", "private, no-cache")
		h.Set("X-Content-Type-Options", "nosniff")
		http.ServeContent(w, r, "", info.LastUpdated, bytes.NewReader(b))
	})
}

// statusOf is the HTTP status of an error's code.
func statusOf(err error) int {
	switch seatflow.ErrorCode(err) {
	case seatflow.ENOTFOUND:
		return http.StatusNotFound
	case seatflow.EUNAUTHENTICATED:
		return http.StatusUnauthorized
	case seatflow.EUNAVAILABLE:
		return http.StatusServiceUnavailable
	case seatflow.EWALLETUNAVAILABLE:
		return http.StatusNotImplemented
	}
	return http.StatusInternalServerError
}

// writeError answers {"error": {"code", "message"}}; an unclassified error's text stays
// on the server.
func writeError(w http.ResponseWriter, status int, err error) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{
		"code": seatflow.ErrorCode(err), "message": seatflow.ErrorMessage(err)}})
}

// notModified reports whether the request's If-Modified-Since is at or after ticket t's
// pass's LastUpdated (to the second, as HTTP dates go), read before the pass is made.
func (s *Service) notModified(r *http.Request, t *seatflow.Ticket) bool {
	since, err := http.ParseTime(r.Header.Get("If-Modified-Since"))
	if err != nil {
		return false
	}
	st, err := s.Catalog.FreshShowtime(r.Context(), t.ShowtimeID)
	if err != nil {
		return false
	}
	return !LastUpdated(st, t).Truncate(time.Second).After(since)
}
