-- hold: takes seats for a hold token, all or nothing.
--
-- KEYS[1] seats hash, KEYS[2] version, KEYS[3] limits hash, KEYS[4] events channel
-- KEYS[5] the on-sale queue's hash, KEYS[6] its passes in use (the admission gate below)
-- ARGV[1] now in ms (the HELD_AT of the new holds)
-- ARGV[2] hold token
-- ARGV[3] user id (field of the limits hash)
-- ARGV[4] purchase limit; 0 = no limit
-- ARGV[5] "1" when single-seat gaps are allowed
-- ARGV[6] takeover token or "": seats held or sold by it count as free and are already
--         counted in the user's limit (a late payment moving its own seats to a new token)
-- ARGV[7] "1" when blocked seats ("3", house seats) count as free (an admin's hold with
--         useBlocked); otherwise a blocked seat is taken like a held one
-- ARGV[8] n, then ARGV[9 .. 8+n] the requested seat ids
-- then g, then g seat ids: the showtime's general seats (STANDARD, PREMIUM) when the hold
--         takes an ACCESSIBLE seat for a customer who did not say they need one; while
--         any of them is free ("0") the hold is refused (0 and none otherwise)
-- then, for the gap rule, each row touched: m, then the row's m seat ids ordered by number
--         (unsellable seats are absent from the hash and so act as a wall; blocked seats
--         are not free, so they count as taken)
-- ARGV[#ARGV-3 .. #ARGV-1] the admission gate (the on-sale queue, docs/DESIGN.md "On-sale
--         queue"): "1" when MySQL says the showtime has a queue, else "0"; the id of the
--         caller's pass whose signature, user, showtime and expiry the caller checked, or
--         ""; that pass's expiry in ms, or "". Read and taken off ARGV first, so the
--         sections above keep their places. While the queue gates holds (not SOLD_OUT or
--         CLOSED, or its state lost with Redis) the pass must not have expired at ARGV[1]
--         and, when issued by the queue's current state (its epoch), still be in use.
-- ARGV[#ARGV] (last) the trace context of the change (a W3C traceparent) or ""
--
-- Returns {"OK", version} | {"UNAVAILABLE", seat id, ...} | {"RESERVED"} (a general seat
--         is free: accessible seats are kept for those who need them) | {"LIMIT", user's count}
--       | {"GAP", stranded seat id} | {"NOHASH"} when the showtime has no seat hash
--       | {"NOT_ADMITTED"} when the gate refuses the caller (nothing is changed).
--
-- Why the queue's pass check is here, reading keys package queue writes (KEYS[5], KEYS[6];
-- TestAdmissionGate in gate_test.go writes them as it does), and not in a script of the
-- queue's run first: the queue spends or takes back a pass (ZREM from KEYS[6]:
-- internal/queue/lua/spend.lua, leave.lua) while holds run, and only a check inside the
-- script that takes the seats sees the same instant as the hold. A check of its own, one
-- round trip earlier, lets a hold through on a pass revoked between the two. It is also a
-- round trip less on the hot path of an on-sale burst: the median hold through an OPEN
-- queue's gate took 81-85 µs as one EVALSHA, 137-148 µs as the pass check's EVALSHA then a
-- hold's (three runs of 20,000 holds of each, interleaved, 2 cores at load average 26):
--   go test -run '^$' -bench AdmissionGate -benchtime 20000x -count 3 ./internal/seats/
-- (BenchmarkAdmissionGate in gate_bench_test.go).

local now, token, user = ARGV[1], ARGV[2], ARGV[3]
local limit = tonumber(ARGV[4])
local allowGaps = ARGV[5] == '1'
local takeover = ARGV[6]
local useBlocked = ARGV[7] == '1'
local n = tonumber(ARGV[8])

-- The admission gate, before anything else is read.
local gated, passId, passExp = ARGV[#ARGV - 3] == '1', ARGV[#ARGV - 2], ARGV[#ARGV - 1]
for _ = 1, 3 do table.remove(ARGV, #ARGV - 1) end
if gated then
  local q = redis.call('HMGET', KEYS[5], 'phase', 'epoch')
  if q[1] ~= 'SOLD_OUT' and q[1] ~= 'CLOSED' then
    if passId == '' or tonumber(passExp) <= tonumber(now) then
      return {'NOT_ADMITTED'}
    end
    -- A pass of the current epoch is valid while it is in use (not spent, not taken back);
    -- one of an earlier epoch, whose record Redis lost, stands on its signature.
    if q[1] and string.match(passId, '^(%d+)%.') == q[2]
        and tonumber(redis.call('ZSCORE', KEYS[6], passId) or '0') ~= tonumber(passExp) then
      return {'NOT_ADMITTED'}
    end
  end
end

-- ownedByTakeover reports whether state v ("1|T|ms" or "2|T") belongs to the takeover token.
local function ownedByTakeover(v)
  if takeover == '' or not v then return false end
  return v == '2|' .. takeover or string.sub(v, 1, #takeover + 3) == '1|' .. takeover .. '|'
end

local requested, ids, conflicts = {}, {}, {}
local fresh = 0
for i = 1, n do
  local id = ARGV[8 + i]
  ids[i] = id
  requested[id] = true
  local v = redis.call('HGET', KEYS[1], id)
  if v == '0' or (useBlocked and v == '3') then
    fresh = fresh + 1
  elseif not v and redis.call('EXISTS', KEYS[1]) == 0 then
    return {'NOHASH'} -- checked only here: a missing field is rare, a missing hash rarer
  elseif not ownedByTakeover(v) then
    conflicts[#conflicts + 1] = id
  end
end
if #conflicts > 0 then
  table.insert(conflicts, 1, 'UNAVAILABLE')
  return conflicts
end

-- Accessible seats go to anyone only once every general seat is held, sold or blocked.
local g = tonumber(ARGV[9 + n])
local first = 10 + n
for from = first, first + g - 1, 500 do
  local states = redis.call('HMGET', KEYS[1], unpack(ARGV, from, math.min(from + 499, first + g - 1)))
  for _, v in ipairs(states) do
    if v == '0' then
      return {'RESERVED'}
    end
  end
end

if limit > 0 then
  local count = tonumber(redis.call('HGET', KEYS[3], user) or '0')
  if count + fresh > limit then
    return {'LIMIT', tostring(count)}
  end
end

-- Gap rule: after taking the seats, no free seat may sit alone between taken seats, walls
-- or the row's ends right next to the selection. Older gaps elsewhere do not block.
if not allowGaps then
  local i = first + g
  while i < #ARGV do
    local m = tonumber(ARGV[i])
    local row, free = {}, {}
    for j = 1, m do
      local id = ARGV[i + j]
      row[j] = id
      free[j] = (not requested[id]) and redis.call('HGET', KEYS[1], id) == '0'
    end
    for j = 1, m do
      if free[j] and not free[j - 1] and not free[j + 1]
          and ((j > 1 and requested[row[j - 1]]) or (j < m and requested[row[j + 1]])) then
        return {'GAP', row[j]}
      end
    end
    i = i + m + 1
  end
end

local changes = {}
for i, id in ipairs(ids) do
  redis.call('HSET', KEYS[1], id, '1|' .. token .. '|' .. now)
  changes[i] = {seatId = id, status = 'HELD'}
end
if fresh > 0 then
  redis.call('HINCRBY', KEYS[3], user, fresh)
end
local ver = redis.call('INCR', KEYS[2])
redis.call('PUBLISH', KEYS[4], cjson.encode(delta(ver, changes)))
return {'OK', tostring(ver)}
