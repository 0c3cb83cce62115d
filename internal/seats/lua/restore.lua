-- restore: gives an order's seats back to its token in Redis, where MySQL says the order
-- has them: sold to a paid order's token (the reconciler's paid-seat repair after a crash
-- between the PAID commit and confirm, or a lost release race), or held for a pending
-- order's token (the re-hold repair: the hash was rebuilt from MySQL before the order's
-- commit, so its seats came back free). Seats that are free, returned to the waiting list
-- ("4|MS": nobody's in Redis, while MySQL says the order has them) or held by the token
-- take the new state; seats of another token are left alone and reported (never silently
-- overwritten).
--
-- KEYS[1] seats hash, KEYS[2] version, KEYS[3] limits hash, KEYS[4] events channel
-- ARGV[1] hold token
-- ARGV[2] user id (seats that were free are added to the user's count)
-- ARGV[3] "" to sell the seats, or the hold time in ms to hold them
-- ARGV[4 .. #ARGV-1] seat ids
-- ARGV[#ARGV] (last) the trace context of the change (a W3C traceparent) or ""
--
-- Returns {number of seats changed, the new version or "0" when nothing changed (both as
-- strings), conflicting seat id, ...}.
local token, user, heldAt = ARGV[1], ARGV[2], ARGV[3]

local held = '1|' .. token .. '|'
local sold = '2|' .. token
local target, status = sold, 'SOLD'
if heldAt ~= '' then
  target, status = held .. heldAt, 'HELD'
end
local changes, conflicts = {}, {}
local fresh = 0
for i = 4, #ARGV - 1 do
  local id = ARGV[i]
  local v = redis.call('HGET', KEYS[1], id)
  local free = v == '0' or (v and string.sub(v, 1, 2) == '4|')
  if free or (status == 'SOLD' and v and string.sub(v, 1, #held) == held) then
    if free then fresh = fresh + 1 end
    redis.call('HSET', KEYS[1], id, target)
    changes[#changes + 1] = {seatId = id, status = status}
  elseif v ~= sold and not (v and string.sub(v, 1, #held) == held) then
    conflicts[#conflicts + 1] = id
  end
end
if fresh > 0 then
  redis.call('HINCRBY', KEYS[3], user, fresh)
end
local ver = 0
if #changes > 0 then
  ver = redis.call('INCR', KEYS[2])
  redis.call('PUBLISH', KEYS[4], cjson.encode(delta(ver, changes)))
end
table.insert(conflicts, 1, tostring(ver))
table.insert(conflicts, 1, tostring(#changes))
return conflicts
