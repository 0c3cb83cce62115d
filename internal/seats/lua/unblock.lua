-- unblock: gives house seats back to sale: seats BLOCKED ("3") become AVAILABLE ("0"), or
-- go to the waiting list ("4|MS", as release.lua) while it has entries waiting.
-- Seats in any other state are left alone, so it is idempotent and safe to repeat (the
-- reconciler uses it for a blocked seat MySQL has no block for).
--
-- KEYS[1] seats hash, KEYS[2] version, KEYS[3] events channel
-- KEYS[4] the waiting list's count of waiting entries
-- ARGV[1 .. #ARGV-1] seat ids
-- ARGV[#ARGV] (last) the trace context of the change (a W3C traceparent) or ""
--
-- Returns {the number of seats unblocked, the new version or 0 when nothing changed,
--          the number of them returned to the waiting list}.
local free, status = returnedOrFree(KEYS[4])
local changes = {}
for i = 1, #ARGV - 1 do
  local id = ARGV[i]
  if redis.call('HGET', KEYS[1], id) == '3' then
    redis.call('HSET', KEYS[1], id, free)
    changes[#changes + 1] = {seatId = id, status = status}
  end
end
local ver = 0
if #changes > 0 then
  ver = redis.call('INCR', KEYS[2])
  redis.call('PUBLISH', KEYS[3], cjson.encode(delta(ver, changes)))
end
local returned = 0
if free ~= '0' then returned = #changes end
return {#changes, ver, returned}
