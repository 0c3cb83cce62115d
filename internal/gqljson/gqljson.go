// Package gqljson writes GraphQL responses as JSON the way every transport of SeatFlow
// sends them: the executor's data, already JSON, is copied as it is (encoding/json would
// scan and compact it again, and escape what it need not), the rest encoded as usual.
package gqljson

import (
	"encoding/json"

	"github.com/99designs/gqlgen/graphql"
)

// AppendResponse appends resp to b as graphql.Response marshals (errors, data, label,
// path, hasNext, extensions; empty ones left out, data null when absent).
func AppendResponse(b []byte, resp *graphql.Response) []byte {
	return appendResponse(b, resp, true)
}

// AppendRefusal appends the response of an operation that did not run: its errors and
// extensions, with no data entry at all (GraphQL over HTTP: a request refused before
// execution has none).
func AppendRefusal(b []byte, resp *graphql.Response) []byte {
	return appendResponse(b, resp, false)
}

func appendResponse(b []byte, resp *graphql.Response, withData bool) []byte {
	b = append(b, '{')
	first := true
	key := func(name string) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, '"', ':')
	}
	if len(resp.Errors) > 0 {
		key("errors")
		b = appendJSON(b, resp.Errors)
	}
	if withData {
		key("data")
		if len(resp.Data) == 0 {
			b = append(b, "null"...)
		} else {
			b = append(b, resp.Data...)
		}
	}
	if resp.Label != "" {
		key("label")
		b = appendJSON(b, resp.Label)
	}
	if len(resp.Path) > 0 {
		key("path")
		b = appendJSON(b, resp.Path)
	}
	if resp.HasNext != nil {
		key("hasNext")
		b = appendJSON(b, *resp.HasNext)
	}
	if len(resp.Extensions) > 0 {
		key("extensions")
		b = appendJSON(b, resp.Extensions)
	}
	return append(b, '}')
}

func appendJSON(b []byte, v any) []byte {
	j, err := json.Marshal(v)
	if err != nil {
		return append(b, "null"...)
	}
	return append(b, j...)
}
