-- block: makes free seats house seats (BLOCKED, state "3"). Only AVAILABLE seats change:
-- a seat already blocked stays so, a held or sold seat (or one not in the hash:
-- unsellable) is refused and left alone, and the others are blocked all the same.
--
-- KEYS[1] seats hash, KEYS[2] version, KEYS[3] events channel
-- ARGV[1 .. #ARGV-1] seat ids
-- ARGV[#ARGV] (last) the trace context of the change (a W3C traceparent) or ""
--
-- Returns {"OK", the new version or "0" when nothing changed, refused seat id, ...}
--       | {"NOHASH"} when the showtime has no seat hash (nothing changed).
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {'NOHASH'}
end
local changes, refused = {}, {}
for i = 1, #ARGV - 1 do
  local id = ARGV[i]
  local v = redis.call('HGET', KEYS[1], id)
  if v == '0' then
    redis.call('HSET', KEYS[1], id, '3')
    changes[#changes + 1] = {seatId = id, status = 'BLOCKED'}
  elseif v ~= '3' then
    refused[#refused + 1] = id
  end
end
local ver = 0
if #changes > 0 then
  ver = redis.call('INCR', KEYS[2])
  redis.call('PUBLISH', KEYS[3], cjson.encode(delta(ver, changes)))
end
table.insert(refused, 1, tostring(ver))
table.insert(refused, 1, 'OK')
return refused
