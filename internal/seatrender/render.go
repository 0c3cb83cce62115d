// Package seatrender writes seat maps and seat-map events as the JSON of a GraphQL
// selection without gqlgen's generic executor, which marshals every element of a list on a
// goroutine of its own and runs each field through its middleware: for a 150-seat map
// that is most of the cost of the query. The bytes are the executor's own, byte for byte
// (a property test over random selections holds the two together); a selection the
// renderer does not know (a field added to the schema later, @defer) is left to the
// executor. It also memoises rendered maps per showtime, version and selection (Memo).
package seatrender

import (
	"bytes"
	"strconv"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"seatflow"
	"seatflow/internal/nodeid"
)

// field is one selected field of an object: its response key and what to write.
type field struct {
	quoted string // `"alias":`, as gqlgen writes it
	kind   kind
	sub    *Plan // for object-valued fields
}

type kind int

const (
	typename kind = iota
	// SeatMap and SeatMapEvent
	seatMapID
	showtimeID
	version
	available
	seatStates
	eventKind
	fromVersion
	// SeatState
	stateID
	state
	seat
	// Seat
	seatID
	seatRow
	seatNumber
	seatX
	seatY
	seatKind
	seatSellable
)

// Plan is a compiled selection of one object type: the fields to write, in order.
type Plan struct {
	typ    string
	fields []field
	key    string // the selection's shape, for memo keys
}

// kinds are the fields the renderer knows, per type.
var kinds = map[string]map[string]kind{
	"SeatMap": {"id": seatMapID, "showtimeId": showtimeID, "version": version, "available": available,
		"seats": seatStates},
	"SeatMapEvent": {"kind": eventKind, "showtimeId": showtimeID, "fromVersion": fromVersion, "version": version, "available": available,
		"seats": seatStates},
	"SeatState": {"id": stateID, "seat": seat, "status": state},
	"Seat": {"id": seatID, "row": seatRow, "number": seatNumber, "x": seatX, "y": seatY, "kind": seatKind,
		"sellable": seatSellable},
}

// subTypes names the object type of the object-valued fields.
var subTypes = map[kind]string{seatStates: "SeatState", seat: "Seat"}

// Compile compiles the selection of a SeatMap or SeatMapEvent field (typ) for one
// operation (fragments, @skip and @include resolved with its variables). It returns nil
// when the selection asks for anything the renderer does not know: the caller then lets
// the executor answer.
func Compile(oc *graphql.OperationContext, sel ast.SelectionSet, typ string) *Plan {
	known, ok := kinds[typ]
	if !ok {
		return nil
	}
	p := &Plan{typ: typ}
	var key bytes.Buffer
	key.WriteString("{")
	for _, f := range graphql.CollectFields(oc, sel, []string{typ}) {
		if f.IsDeferred() {
			return nil
		}
		k, ok := known[f.Name]
		if f.Name == "__typename" {
			k, ok = typename, true
		}
		if !ok {
			return nil
		}
		var q bytes.Buffer
		writeString(&q, f.Alias)
		q.WriteByte(':')
		out := field{quoted: q.String(), kind: k}
		if sub, ok := subTypes[k]; ok {
			if out.sub = Compile(oc, f.Selections, sub); out.sub == nil {
				return nil
			}
		}
		key.WriteString(strconv.Quote(f.Alias))
		key.WriteString(":")
		key.WriteString(f.Name)
		if out.sub != nil {
			key.WriteString(out.sub.key)
		}
		key.WriteString(",")
		p.fields = append(p.fields, out)
	}
	key.WriteString("}")
	p.key = key.String()
	return p
}

// Key identifies the selection's shape: two plans with the same key write the same bytes
// for the same value.
func (p *Plan) Key() string { return p.key }

// WriteSeatMap writes m as the plan's SeatMap selection.
func (p *Plan) WriteSeatMap(w *bytes.Buffer, m *seatflow.SeatMap) {
	w.WriteByte('{')
	for i, f := range p.fields {
		p.writeKey(w, i, f)
		switch f.kind {
		case seatMapID:
			writeID(w, nodeid.SeatMap, m.ShowtimeID)
		case showtimeID:
			writeID(w, nodeid.Showtime, m.ShowtimeID)
		case version:
			writeInt(w, m.Version)
		case available:
			writeInt(w, m.Available)
		case seatStates:
			f.sub.writeStates(w, m.Seats)
		}
	}
	w.WriteByte('}')
}

// WriteEvent writes ev as the plan's SeatMapEvent selection.
func (p *Plan) WriteEvent(w *bytes.Buffer, ev *seatflow.SeatMapEvent) {
	w.WriteByte('{')
	for i, f := range p.fields {
		p.writeKey(w, i, f)
		switch f.kind {
		case eventKind:
			writeString(w, string(ev.Kind))
		case showtimeID:
			writeID(w, nodeid.Showtime, ev.ShowtimeID)
		case fromVersion:
			writeInt(w, ev.FromVersion)
		case version:
			writeInt(w, ev.Version)
		case available:
			writeInt(w, ev.Available)
		case seatStates:
			f.sub.writeStates(w, ev.Seats)
		}
	}
	w.WriteByte('}')
}

func (p *Plan) writeStates(w *bytes.Buffer, states []seatflow.SeatState) {
	w.WriteByte('[')
	for n := range states {
		if n > 0 {
			w.WriteByte(',')
		}
		st := &states[n]
		w.WriteByte('{')
		for i, f := range p.fields {
			p.writeKey(w, i, f)
			switch f.kind {
			case stateID:
				writeID(w, nodeid.SeatState, st.ShowtimeID, st.Seat.ID)
			case state:
				writeString(w, string(st.Status))
			case seat:
				f.sub.writeSeat(w, &st.Seat)
			}
		}
		w.WriteByte('}')
	}
	w.WriteByte(']')
}

func (p *Plan) writeSeat(w *bytes.Buffer, s *seatflow.Seat) {
	w.WriteByte('{')
	for i, f := range p.fields {
		p.writeKey(w, i, f)
		switch f.kind {
		case seatID:
			writeID(w, nodeid.Seat, s.ID)
		case seatRow:
			writeString(w, s.Row)
		case seatNumber:
			writeInt(w, s.Number)
		case seatX:
			writeInt(w, s.X)
		case seatY:
			writeInt(w, s.Y)
		case seatKind:
			writeString(w, string(s.Kind))
		case seatSellable:
			if s.Sellable {
				w.WriteString("true")
			} else {
				w.WriteString("false")
			}
		}
	}
	w.WriteByte('}')
}

// writeKey writes the i-th field's `"alias":` (after a comma but for the first), and the value
// of __typename, which every object has: the object's type.
func (p *Plan) writeKey(w *bytes.Buffer, i int, f field) {
	if i > 0 {
		w.WriteByte(',')
	}
	w.WriteString(f.quoted)
	if f.kind == typename {
		writeString(w, p.typ)
	}
}

// writeID writes the API's id of the object of type typ with database ids ids, quoted
// (model.MarshalID, model.MarshalSeatRef).
func writeID(w *bytes.Buffer, typ string, ids ...int) {
	w.WriteByte('"')
	w.Write(nodeid.Append(w.AvailableBuffer(), typ, ids...))
	w.WriteByte('"')
}

func writeInt(w *bytes.Buffer, n int) {
	var b [20]byte
	w.Write(strconv.AppendInt(b[:0], int64(n), 10))
}

const hexDigits = "0123456789abcdef"

// writeString writes s quoted exactly as gqlgen's graphql.MarshalString does: control
// characters, backslash and quote escaped, everything else as it is.
func writeString(w *bytes.Buffer, s string) {
	w.WriteByte('"')
	start := 0
	for i, c := range s {
		if c >= 0x20 && c != '\\' && c != '"' {
			continue
		}
		w.WriteString(s[start:i])
		switch c {
		case '\t':
			w.WriteString(`\t`)
		case '\r':
			w.WriteString(`\r`)
		case '\n':
			w.WriteString(`\n`)
		case '\\':
			w.WriteString(`\\`)
		case '"':
			w.WriteString(`\"`)
		default:
			w.WriteString(`\u00`)
			w.WriteByte(hexDigits[c>>4])
			w.WriteByte(hexDigits[c&0xf])
		}
		start = i + 1
	}
	w.WriteString(s[start:])
	w.WriteByte('"')
}
