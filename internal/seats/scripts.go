package seats

import (
	"context"
	_ "embed"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/hold.lua
	holdSrc string
	//go:embed lua/confirm.lua
	confirmSrc string
	//go:embed lua/release.lua
	releaseSrc string
	//go:embed lua/init.lua
	initSrc string
	//go:embed lua/snapshot.lua
	snapshotSrc string
	//go:embed lua/restore.lua
	restoreSrc string
	//go:embed lua/block.lua
	blockSrc string
	//go:embed lua/unblock.lua
	unblockSrc string
	//go:embed lua/offer.lua
	offerSrc string
	//go:embed lua/resell.lua
	resellSrc string
	// lua/delta.lua: the message a seat change publishes, written once for the
	// scripts that publish one (put in front of each).
	//go:embed lua/delta.lua
	deltaSrc string
)

// The scripts, each compiled once (Script.Run: EVALSHA, EVAL on NOSCRIPT). Each .lua file
// starts with its contract: KEYS, ARGV and the reply.
var (
	holdScript     = redis.NewScript(deltaSrc + holdSrc)    // lua/hold.lua: take seats for a hold, all or nothing
	confirmScript  = redis.NewScript(deltaSrc + confirmSrc) // lua/confirm.lua: sell a hold's seats to it
	releaseScript  = redis.NewScript(deltaSrc + releaseSrc) // lua/release.lua: free a token's seats
	initScript     = redis.NewScript(initSrc)               // lua/init.lua: create the seat hash unless it exists
	snapshotScript = redis.NewScript(snapshotSrc)           // lua/snapshot.lua: the seat hash and its version at one instant
	restoreScript  = redis.NewScript(deltaSrc + restoreSrc) // lua/restore.lua: give an order's seats back to its token
	blockScript    = redis.NewScript(deltaSrc + blockSrc)   // lua/block.lua: make free seats house seats
	unblockScript  = redis.NewScript(deltaSrc + unblockSrc) // lua/unblock.lua: give house seats back to sale
	offerScript    = redis.NewScript(deltaSrc + offerSrc)   // lua/offer.lua: hold returned seats for a waiting-list offer
	resellScript   = redis.NewScript(deltaSrc + resellSrc)  // lua/resell.lua: put returned seats on sale
)

// run runs script through the store's batch (rdb.Batch: its round trips shared with the
// calls of other goroutines), its latency observed under its name.
func (s *Store) run(ctx context.Context, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	defer observeScript(ctx, script, time.Now())
	return s.batch.Run(ctx, s.RDB, script, keys, args...)
}
