-- release: frees the seats held or sold by a token and gives the user's limit back.
-- Seats of any other token are left alone, so it is idempotent and safe to repeat.
-- While the showtime's waiting list has entries waiting (KEYS[5] > 0), the seats freed
-- are returned to it ("4|RETURNED_AT_MS": HELD to everyone) instead of AVAILABLE, so the
-- waiting list's offers (lua/offer.lua) take them before anyone else can (docs/DESIGN.md
-- "Waiting list").
--
-- KEYS[1] seats hash, KEYS[2] version, KEYS[3] limits hash, KEYS[4] events channel
-- KEYS[5] the waiting list's count of waiting entries
-- ARGV[1] hold token
-- ARGV[2] user id (field of the limits hash); "" when unknown (an orphan hold): no count
--         is changed and the reconciler recounts
-- ARGV[3 .. #ARGV-1] seat ids
-- ARGV[#ARGV] (last) the trace context of the change (a W3C traceparent) or ""
--
-- Returns {the number of seats released, the new version or 0 when nothing changed,
--          the number of them returned to the waiting list}.
local token, user = ARGV[1], ARGV[2]

local held = '1|' .. token .. '|'
local sold = '2|' .. token
local free, status = returnedOrFree(KEYS[5])
local changes = {}
local ver = 0
for i = 3, #ARGV - 1 do
  local id = ARGV[i]
  local v = redis.call('HGET', KEYS[1], id)
  if v and (v == sold or string.sub(v, 1, #held) == held) then
    redis.call('HSET', KEYS[1], id, free)
    changes[#changes + 1] = {seatId = id, status = status}
  end
end
if #changes > 0 then
  -- never below 0: a count that drifted low is the reconciler's to recount
  if user ~= '' and redis.call('HINCRBY', KEYS[3], user, -#changes) <= 0 then
    redis.call('HDEL', KEYS[3], user)
  end
  ver = redis.call('INCR', KEYS[2])
  redis.call('PUBLISH', KEYS[4], cjson.encode(delta(ver, changes)))
end
local returned = 0
if free ~= '0' then returned = #changes end
return {#changes, ver, returned}
