package cache_test

import (
	"seatflow/internal/cache"
	"seatflow/internal/catalog"
)

// The catalog depends on these interfaces; the assertions keep the signatures in step.
// (An external test package, so catalog may import cache without a cycle.)
var (
	_ catalog.ByteCache     = (*cache.Cache)(nil)
	_ catalog.Invalidations = (*cache.Outbox)(nil)
)
