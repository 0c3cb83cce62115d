-- ticket: a user's ticket in a showtime's on-sale queue, its holder marked seen.
--
-- KEYS[1] queue hash, KEYS[2] waiting set, KEYS[3] tickets hash, KEYS[4] users hash,
-- KEYS[5] seen hash
-- ARGV[1] now in ms, ARGV[2] user id
--
-- Returns view(...) (view.lua) | {"NONE"} when the user has no ticket | {"NOQUEUE"} when
-- the queue has no state.
if redis.call('EXISTS', KEYS[1]) == 0 then return {'NOQUEUE'} end
local tnum = redis.call('HGET', KEYS[4], ARGV[2])
local rec = tnum and redis.call('HGET', KEYS[3], tnum)
if not rec then return {'NONE'} end
redis.call('HSET', KEYS[5], tnum, ARGV[1])
return view(KEYS[1], KEYS[2], tnum, rec)
