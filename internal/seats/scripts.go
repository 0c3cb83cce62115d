package seats

import (
	_ "embed"

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
)

// The scripts, each compiled once (Script.Run: EVALSHA, EVAL on NOSCRIPT). Each .lua file
// starts with its contract: KEYS, ARGV and the reply.
var (
	holdScript     = redis.NewScript(holdSrc)     // lua/hold.lua: take seats for a hold, all or nothing
	confirmScript  = redis.NewScript(confirmSrc)  // lua/confirm.lua: sell a hold's seats to it
	releaseScript  = redis.NewScript(releaseSrc)  // lua/release.lua: free a token's seats
	initScript     = redis.NewScript(initSrc)     // lua/init.lua: create the seat hash unless it exists
	snapshotScript = redis.NewScript(snapshotSrc) // lua/snapshot.lua: the seat hash and its version at one instant
	restoreScript  = redis.NewScript(restoreSrc)  // lua/restore.lua: give an order's seats back to its token
)
