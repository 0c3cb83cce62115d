-- confirm: marks the seats held by a token as sold to it (payment). Idempotent.
--
-- KEYS[1] seats hash, KEYS[2] version, KEYS[3] events channel
-- ARGV[1] hold token
-- ARGV[2 .. #ARGV-1] seat ids
-- ARGV[#ARGV] (last) the trace context of the change (a W3C traceparent) or ""
--
-- Returns {the number of the given seats that are now sold to the token (fewer than asked
-- means some were lost, e.g. released, and the caller must repair), the new version or 0
-- when nothing changed}.
local token = ARGV[1]

local held = '1|' .. token .. '|'
local sold = '2|' .. token
local changes = {}
local count = 0
for i = 2, #ARGV - 1 do
  local id = ARGV[i]
  local v = redis.call('HGET', KEYS[1], id)
  if v == sold then
    count = count + 1
  elseif v and string.sub(v, 1, #held) == held then
    redis.call('HSET', KEYS[1], id, sold)
    changes[#changes + 1] = {seatId = id, status = 'SOLD'}
    count = count + 1
  end
end
local ver = 0
if #changes > 0 then
  ver = redis.call('INCR', KEYS[2])
  redis.call('PUBLISH', KEYS[3], cjson.encode(delta(ver, changes)))
end
return {count, ver}
