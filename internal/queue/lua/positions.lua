-- positions: where some tickets are now, at one instant (an instance's subscribers).
--
-- KEYS[1] queue hash, KEYS[2] waiting set, KEYS[3] tickets hash
-- ARGV pairs: a ticket number, then its member of the waiting set ("" once it is not
-- waiting)
--
-- Returns {phase or nil, entrants waiting, admissions per second measured over the last
-- minute or "", then for each pair: its rank in the waiting set while it is there,
-- otherwise its ticket's JSON (view.lua), nil when the ticket is gone}.
local q = redis.call('HMGET', KEYS[1], 'phase', 'measured')
local out = {q[1], redis.call('ZCARD', KEYS[2]), q[2] or ''}
for i = 1, #ARGV, 2 do
  local r = false
  if ARGV[i + 1] ~= '' then r = redis.call('ZRANK', KEYS[2], ARGV[i + 1]) end
  if not r then r = redis.call('HGET', KEYS[3], ARGV[i]) end
  out[#out + 1] = r
end
return out
