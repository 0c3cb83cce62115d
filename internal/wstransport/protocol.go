package wstransport

import (
	"encoding/json"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"seatflow/internal/gqljson"
)

// protocol names the messages of one subprotocol: graphql-transport-ws, or the legacy
// graphql-ws of subscriptions-transport-ws (also what a client asking for none gets).
type protocol struct {
	legacy bool
	// Client → server.
	init, subscribe, stop string
	// Server → client.
	ack, data, errMsg, complete string
}

var (
	transportWS = protocol{init: "connection_init", subscribe: "subscribe", stop: "complete",
		ack: "connection_ack", data: "next", errMsg: "error", complete: "complete"}
	graphqlWS = protocol{legacy: true, init: "connection_init", subscribe: "start", stop: "stop",
		ack: "connection_ack", data: "data", errMsg: "error", complete: "complete"}
)

func protocolOf(subprotocol string) protocol {
	if subprotocol == protoTransportWS {
		return transportWS
	}
	return graphqlWS
}

// message is a message from a client.
type message struct {
	ID      string          `json:"id"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
}

// frame builds a server message {"id":…,"type":…,"payload":…}; id and payload are
// left out when empty.
func frame(typ, id string, payload []byte) []byte {
	b := make([]byte, 0, len(payload)+len(id)+40)
	b = append(b, '{')
	if id != "" {
		b = append(b, `"id":`...)
		b = appendString(b, id)
		b = append(b, ',')
	}
	b = append(b, `"type":`...)
	b = appendString(b, typ)
	if len(payload) > 0 {
		b = append(b, `,"payload":`...)
		b = append(b, payload...)
	}
	return append(b, '}')
}

// dataFrame is a data (next) message carrying an execution result.
func (p protocol) dataFrame(id string, resp *graphql.Response) []byte {
	return frame(p.data, id, gqljson.AppendResponse(nil, resp))
}

// errorFrame is an error message: the operation failed before it ran.
func (p protocol) errorFrame(id string, errs gqlerror.List) []byte {
	b, _ := json.Marshal(errs)
	return frame(p.errMsg, id, b)
}

// seatPrefix and seatSuffix wrap a rendered seat-map event into the data message of
// subscription id, whose root field is answered under alias: exactly the bytes
// dataFrame writes for the executor's response.
func (p protocol) seatPrefix(id, alias string) []byte {
	b := make([]byte, 0, len(id)+len(alias)+48)
	b = append(b, `{"id":`...)
	b = appendString(b, id)
	b = append(b, `,"type":`...)
	b = appendString(b, p.data)
	b = append(b, `,"payload":{"data":{`...)
	b = appendString(b, alias)
	return append(b, ':')
}

// appendString appends s as a JSON string (client-chosen ids may hold anything).
func appendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s)
	return append(b, q...)
}

var seatSuffix = []byte("}}}")
