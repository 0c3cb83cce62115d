package gqlclient

import (
	"encoding/json"
	"errors"
	"fmt"
)

// NoCode is the code a tool gives an error that carries no extensions.code (the API never
// answers one: every error it sends is coded).
const NoCode = "NO_CODE"

// ErrNotJSON is wrapped by the error of an answer that is not JSON.
var ErrNotJSON = errors.New("response is not JSON")

// Response is a GraphQL answer: its data as the server wrote it, and its errors.
type Response struct {
	Data   json.RawMessage `json:"data"`
	Errors []Error         `json:"errors"`
}

// Error is one GraphQL error of an answer.
type Error struct {
	Message    string         `json:"message"`
	Extensions map[string]any `json:"extensions"`
}

// Code is the error's extensions.code, NoCode when it has none.
func (e *Error) Code() string {
	if c, ok := e.Extensions["code"].(string); ok && c != "" {
		return c
	}
	return NoCode
}

// Error reads "CODE: message".
func (e *Error) Error() string { return e.Code() + ": " + e.Message }

// Decode reads raw, the body of an answer.
func Decode(raw []byte) (*Response, error) {
	var r Response
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("%w: %.200s", ErrNotJSON, raw)
	}
	return &r, nil
}

// Code is the first error's code: "" without errors.
func (r *Response) Code() string {
	if len(r.Errors) == 0 {
		return ""
	}
	return r.Errors[0].Code()
}

// Err is the first error (a *Error), nil without errors.
func (r *Response) Err() error {
	if len(r.Errors) == 0 {
		return nil
	}
	return &r.Errors[0]
}
