package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// decodedValues keeps the decoded value of catalog entries beside the bytes it was decoded
// from. A read whose bytes equal the kept ones (bytes.Equal: a hall with its seats costs
// a compare, not a JSON decode) shares the kept value, so a decoded value never outlives
// its bytes: once the cache drops or replaces them, the next read decodes the new bytes.
// Shared values are read-only; every caller only reads them.
type decodedValues struct {
	mu  sync.Mutex
	lru *simplelru.LRU[string, decodedValue]
}

type decodedValue struct {
	raw []byte
	v   any
}

// decodedEntries bounds the values kept (the hot part of a catalog is far smaller).
const decodedEntries = 8192

func (d *decodedValues) get(key string, raw []byte) (any, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.lru == nil {
		return nil, false
	}
	e, ok := d.lru.Get(key)
	if !ok || !bytes.Equal(e.raw, raw) {
		return nil, false
	}
	return e.v, true
}

func (d *decodedValues) put(key string, raw []byte, v any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.lru == nil {
		d.lru, _ = simplelru.NewLRU[string, decodedValue](decodedEntries, nil)
	}
	d.lru.Add(key, decodedValue{raw: raw, v: v})
}

// decode returns the value of a cache entry's bytes (nil: known missing), shared with
// earlier reads of the same bytes.
func decode[V any](s *Service, key string, raw []byte) (*V, error) {
	if raw == nil {
		return nil, nil
	}
	if v, ok := s.decoded.get(key, raw); ok {
		if out, ok := v.(*V); ok {
			return out, nil
		}
	}
	v := new(V)
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, fmt.Errorf("decode cached %s: %w", key, err)
	}
	s.decoded.put(key, raw, v)
	return v, nil
}

// local returns the entries of ids when every one is in the cache's local level, without
// waiting or asking anything else; false otherwise.
func local[K comparable, V any](ctx context.Context, s *Service, ids []K, keyOf func(K) string) ([]*V, bool) {
	lc, ok := s.Cache.(LocalCache)
	if !ok {
		return nil, false
	}
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = keyOf(id)
	}
	raw, ok := lc.Local(ctx, keys)
	if !ok {
		return nil, false
	}
	out := make([]*V, len(ids))
	for i, b := range raw {
		v, err := decode[V](s, keys[i], b)
		if err != nil {
			return nil, false
		}
		out[i] = v
	}
	return out, true
}
