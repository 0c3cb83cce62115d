-- init: creates a showtime's seat hash (open sale, or rebuild after Redis lost it).
-- Never overwrites an existing hash.
--
-- KEYS[1] seats hash, KEYS[2] version, KEYS[3] limits hash, KEYS[4] events channel
-- ARGV[1] base: when Redis lost the version key too, the version starts above it
-- ARGV[2] n, then n pairs: seat id, state ("0", "1|TOKEN|HELD_AT_MS", "2|TOKEN" or "3"
--         blocked),
--         sellable seats only
-- then pairs: user id, seats the user holds or bought (replaces the limits hash)
--
-- Returns {1, the new version} when it created the hash, {0, 0} when one existed (and
-- nothing changed).
-- The version key, when Redis kept it, is above every version issued before and is
-- incremented; otherwise the version starts above the base, which the caller chose above
-- every version issued before (docs/DESIGN.md "Live seat map").
if redis.call('EXISTS', KEYS[1]) == 1 then
  return {0, 0}
end
local base = tonumber(ARGV[1])
local n = tonumber(ARGV[2])
local changes = {}
for i = 1, n do
  local id, v = ARGV[2 * i + 1], ARGV[2 * i + 2]
  redis.call('HSET', KEYS[1], id, v)
  local status = 'AVAILABLE'
  if string.sub(v, 1, 1) == '1' then
    status = 'HELD'
  elseif string.sub(v, 1, 1) == '2' then
    status = 'SOLD'
  elseif v == '3' then
    status = 'BLOCKED'
  end
  changes[i] = {seatId = id, status = status}
end
redis.call('DEL', KEYS[3])
for i = 2 * n + 3, #ARGV, 2 do
  redis.call('HSET', KEYS[3], ARGV[i], ARGV[i + 1])
end
if redis.call('EXISTS', KEYS[2]) == 0 then
  redis.call('SET', KEYS[2], base)
end
local ver = redis.call('INCR', KEYS[2])
if n > 0 then
  redis.call('PUBLISH', KEYS[4], cjson.encode({version = ver, changes = changes}))
end
return {1, ver}
