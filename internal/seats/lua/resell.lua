-- resell: puts seats returned to the waiting list ("4|MS") on sale ("0", AVAILABLE) when no
-- waiting entry fits them (or none is left). Seats in any other state are left alone, so
-- it is idempotent and safe to repeat.
--
-- KEYS[1] seats hash, KEYS[2] version, KEYS[3] events channel
-- ARGV[1 .. #ARGV-1] seat ids
-- ARGV[#ARGV] (last) the trace context of the change (a W3C traceparent) or ""
--
-- Returns {the number of seats put on sale, the new version or 0 when nothing changed}.
local changes = {}
for i = 1, #ARGV - 1 do
  local v = redis.call('HGET', KEYS[1], ARGV[i])
  if v and string.sub(v, 1, 2) == '4|' then
    redis.call('HSET', KEYS[1], ARGV[i], '0')
    changes[#changes + 1] = {seatId = ARGV[i], status = 'AVAILABLE'}
  end
end
local ver = 0
if #changes > 0 then
  ver = redis.call('INCR', KEYS[2])
  redis.call('PUBLISH', KEYS[3], cjson.encode(delta(ver, changes)))
end
return {#changes, ver}
