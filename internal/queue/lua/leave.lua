-- leave: takes a user's ticket out of a showtime's on-sale queue; a pass in use is given
-- back with it (its place among the passes in use goes to the next entrant).
--
-- KEYS[1] waiting set, KEYS[2] tickets hash, KEYS[3] users hash, KEYS[4] seen hash,
-- KEYS[5] passes in use
-- ARGV[1] user id
--
-- Returns 1 when the user had a ticket, 0 when not.
local tnum = redis.call('HGET', KEYS[3], ARGV[1])
if not tnum then return 0 end
local rec = redis.call('HGET', KEYS[2], tnum)
if rec then
  local t = cjson.decode(rec)
  if t.m then redis.call('ZREM', KEYS[1], t.m) end
  if t.s == 'A' and t.p then redis.call('ZREM', KEYS[5], t.p) end
end
redis.call('HDEL', KEYS[2], tnum)
redis.call('HDEL', KEYS[3], ARGV[1])
redis.call('HDEL', KEYS[4], tnum)
return 1
