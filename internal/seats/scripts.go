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

// holdScript takes seats for a hold token, all or nothing.
//
// KEYS[1] seats hash, KEYS[2] version, KEYS[3] limits hash, KEYS[4] events channel
// ARGV[1] now ms, ARGV[2] token, ARGV[3] user id, ARGV[4] purchase limit (0 = none),
// ARGV[5] "1" if gaps are allowed, ARGV[6] takeover token or "", ARGV[7] n,
// ARGV[8..7+n] seat ids, then per touched row: m and the row's m seat ids by number.
//
// Returns {"OK", version} | {"UNAVAILABLE", id...} | {"LIMIT", count} | {"GAP", id} | {"NOHASH"}.
var holdScript = redis.NewScript(holdSrc)

// confirmScript marks seats held by a token as sold to it; idempotent.
//
// KEYS[1] seats hash, KEYS[2] version, KEYS[3] events channel
// ARGV[1] token, ARGV[2..] seat ids
//
// Returns {the number of the given seats now sold to the token, new version or 0}.
var confirmScript = redis.NewScript(confirmSrc)

// releaseScript frees seats held or sold by a token and decrements the user's count.
//
// KEYS[1] seats hash, KEYS[2] version, KEYS[3] limits hash, KEYS[4] events channel
// ARGV[1] token, ARGV[2] user id ("" = leave counts alone), ARGV[3..] seat ids
//
// Returns {the number of seats released, new version or 0}.
var releaseScript = redis.NewScript(releaseSrc)

// initScript creates the seat hash unless it exists.
//
// KEYS[1] seats hash, KEYS[2] version, KEYS[3] limits hash, KEYS[4] events channel
// ARGV[1] n, n pairs (seat id, state), then pairs (user id, count).
//
// Returns {1, new version} if it created the hash, {0, 0} if one existed.
var initScript = redis.NewScript(initSrc)

// snapshotScript reads the seat hash and the version atomically.
//
// KEYS[1] seats hash, KEYS[2] version
//
// Returns {version string, {seat id, state, ...}}.
var snapshotScript = redis.NewScript(snapshotSrc)

// restoreScript gives an order's seats back to its token: sold to it (ARGV[3] "") where
// they are free or held by it, or held by it since ARGV[3] ms where they are free; seats
// of other tokens are reported, not overwritten.
//
// KEYS[1] seats hash, KEYS[2] version, KEYS[3] limits hash, KEYS[4] events channel
// ARGV[1] token, ARGV[2] user id, ARGV[3] "" or hold time in ms, ARGV[4..] seat ids
//
// Returns {changed count, new version or "0" (strings), conflicting seat id...}.
var restoreScript = redis.NewScript(restoreSrc)
