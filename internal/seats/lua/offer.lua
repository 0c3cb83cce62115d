-- offer: holds seats returned to the waiting list ("4|MS") for the offer to one entry, all
-- or nothing: each becomes "1|TOKEN|NOW" and the entrant's count grows by their number.
-- They were HELD to everyone and stay so; the change is published all the same, so every
-- change has its version.
--
-- KEYS[1] seats hash, KEYS[2] version, KEYS[3] limits hash, KEYS[4] events channel
-- ARGV[1] now in ms, ARGV[2] the offer's hold token, ARGV[3] the entrant's user id
-- ARGV[4 .. #ARGV-1] seat ids
-- ARGV[#ARGV] (last) the trace context of the change (a W3C traceparent) or ""
--
-- Returns {"OK", version} | {"GONE", seat id, ...}: seats no longer returned (another
-- instance offered them, or they went on sale); nothing is changed.
local now, token, user = ARGV[1], ARGV[2], ARGV[3]
local gone = {}
for i = 4, #ARGV - 1 do
  local v = redis.call('HGET', KEYS[1], ARGV[i])
  if not v or string.sub(v, 1, 2) ~= '4|' then
    gone[#gone + 1] = ARGV[i]
  end
end
if #gone > 0 then
  table.insert(gone, 1, 'GONE')
  return gone
end
local changes = {}
for i = 4, #ARGV - 1 do
  redis.call('HSET', KEYS[1], ARGV[i], '1|' .. token .. '|' .. now)
  changes[#changes + 1] = {seatId = ARGV[i], status = 'HELD'}
end
redis.call('HINCRBY', KEYS[3], user, #changes)
local ver = redis.call('INCR', KEYS[2])
redis.call('PUBLISH', KEYS[4], cjson.encode(delta(ver, changes)))
return {'OK', tostring(ver)}
