-- close: ends a showtime's on-sale queue (CLOSED: its showtime started or was cancelled):
-- holds are gated no more, the seed is revealed, and the queue's keys expire.
--
-- KEYS[1] queue hash, KEYS[2 ..] the queue's other keys, then (last) its events channel
-- ARGV[1] now in ms, ARGV[2] how long the closed queue's keys are kept (s)
--
-- Returns {"CLOSED", passes issued} ({"NOSTATE"} when there is no state); a repeat changes
-- nothing and publishes nothing.
local c = redis.call('HMGET', KEYS[1], 'phase', 'passes')
if not c[1] then return {'NOSTATE'} end
if c[1] ~= 'CLOSED' then
  redis.call('HSET', KEYS[1], 'phase', 'CLOSED', 'closedAt', ARGV[1])
  local v = redis.call('HINCRBY', KEYS[1], 'v', 1)
  redis.call('PUBLISH', KEYS[#KEYS], cjson.encode({v = v, ph = 'CLOSED', at = ARGV[1]}))
end
for i = 1, #KEYS - 1 do
  redis.call('EXPIRE', KEYS[i], ARGV[2])
end
return {'CLOSED', c[2] or '0'}
