package gqlclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Protocol is the websocket subprotocol the tools speak.
const Protocol = "graphql-transport-ws"

// Message types of graphql-transport-ws.
const (
	TypeConnectionInit = "connection_init"
	TypeConnectionAck  = "connection_ack"
	TypePing           = "ping"
	TypePong           = "pong"
	TypeSubscribe      = "subscribe"
	TypeNext           = "next"
	TypeError          = "error"
	TypeComplete       = "complete"
)

// Message is a graphql-transport-ws message a client sends.
type Message struct {
	ID      string `json:"id,omitempty"`
	Type    string `json:"type"`
	Payload any    `json:"payload,omitempty"`
}

// Incoming is a graphql-transport-ws message the server sends, its payload undecoded.
type Incoming struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
}

// ErrEnded is wrapped by Next's error when the server ended the subscription (an error
// or complete message) rather than the connection.
var ErrEnded = errors.New("subscription ended")

// WebsocketURL is the websocket address of /query of the server at base (http → ws,
// https → wss).
func WebsocketURL(base string) string { return "ws" + strings.TrimPrefix(base, "http") + "/query" }

// SubscribeOptions bound the phases of a subscription.
type SubscribeOptions struct {
	// DialTimeout bounds the connection and the upgrade.
	DialTimeout time.Duration
	// AckTimeout, when set, is how long Subscribe waits for connection_ack before it
	// subscribes; when zero it subscribes at once, right after connection_init.
	AckTimeout time.Duration
	// ReadTimeout is the silence after which Next gives the connection up: the server
	// pings every few seconds.
	ReadTimeout time.Duration
	// Token is the bearer token connection_init carries; anonymous when empty.
	Token string
}

// Subscription is one subscription on a connection of its own; one goroutine reads it
// with Next.
type Subscription struct {
	conn        *websocket.Conn
	readTimeout time.Duration
	done        chan struct{}
	closeOnce   sync.Once
}

// Subscribe connects to the server at base, starts a graphql-transport-ws session and
// subscribes to req (id "1"). The connection is closed by Close, or, with a close frame
// as a client leaving says goodbye, when ctx ends.
func Subscribe(ctx context.Context, base string, req Request, opt SubscribeOptions) (*Subscription, error) {
	dialer := websocket.Dialer{HandshakeTimeout: opt.DialTimeout, Subprotocols: []string{Protocol}}
	conn, _, err := dialer.DialContext(ctx, WebsocketURL(base), nil)
	if err != nil {
		return nil, err
	}
	s := &Subscription{conn: conn, readTimeout: opt.ReadTimeout, done: make(chan struct{})}
	go func() {
		select {
		case <-ctx.Done():
			_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
		case <-s.done:
		}
		conn.Close()
	}()
	if err := s.start(req, opt.AckTimeout, opt.Token); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// start sends connection_init, waits for the ack when asked to, and subscribes.
func (s *Subscription) start(req Request, ackTimeout time.Duration, token string) error {
	init := map[string]any{}
	if token != "" {
		init["Authorization"] = "Bearer " + token
	}
	if err := s.conn.WriteJSON(Message{Type: TypeConnectionInit, Payload: init}); err != nil {
		return err
	}
	if ackTimeout > 0 {
		_ = s.conn.SetReadDeadline(time.Now().Add(ackTimeout))
		for acked := false; !acked; {
			var m Incoming
			if err := s.conn.ReadJSON(&m); err != nil {
				return err
			}
			switch m.Type {
			case TypeConnectionAck:
				acked = true
			case TypePing:
				if err := s.pong(); err != nil {
					return err
				}
			}
		}
	}
	return s.conn.WriteJSON(Message{ID: "1", Type: TypeSubscribe, Payload: req})
}

func (s *Subscription) pong() error { return s.conn.WriteJSON(Message{Type: TypePong}) }

// Next returns the payload of the next "next" message, answering pings on the way. It
// fails when the connection ends or stays silent for the read timeout, and with an error
// wrapping ErrEnded when the server ends the subscription.
func (s *Subscription) Next() (json.RawMessage, error) {
	for {
		_ = s.conn.SetReadDeadline(time.Now().Add(s.readTimeout))
		_, b, err := s.conn.ReadMessage()
		if err != nil {
			return nil, err
		}
		var m Incoming
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, err
		}
		switch m.Type {
		case TypePing:
			if err := s.pong(); err != nil {
				return nil, err
			}
		case TypeNext:
			return m.Payload, nil
		case TypeError, TypeComplete:
			return nil, fmt.Errorf("%w: %s %s", ErrEnded, m.Type, m.Payload)
		}
	}
}

// Close closes the connection; it may be called more than once.
func (s *Subscription) Close() { s.closeOnce.Do(func() { close(s.done) }) }
