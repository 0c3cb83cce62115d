-- admit: one tick of a showtime's on-sale queue, about once a second, by the one instance
-- holding the queue's lease (taken or renewed here, so two instances never admit at once).
--
-- KEYS[1] queue hash, KEYS[2] waiting set, KEYS[3] tickets hash, KEYS[4] seen hash,
-- KEYS[5] passes in use, KEYS[6] rate samples, KEYS[7] lease, KEYS[8] events channel,
-- KEYS[9] the showtime's seat hash, KEYS[10] its seat-map version
-- ARGV[1] now in ms
-- ARGV[2] the caller's lease token, ARGV[3] the lease's length in ms
-- ARGV[4] "1" when the caller has opened the showtime's sales (the queue may open now)
-- ARGV[5] how long an entrant may go unseen (ms) before its turn is skipped
-- ARGV[6] the most absent entrants skipped in one tick
--
-- While OPEN it admits the next entrants, each with a pass (id "EPOCH.N", expiry: now +
-- the pass length, whole seconds), as many as the smallest of: the rate's credit (it
-- accrues admitPerMinute / 60 a second, at most one second's worth, so a stall never
-- makes a burst), the room under maxActive passes in use, the room under
-- ceil(available seats / averagePartySize) passes in use, the entrants waiting. An
-- entrant unseen for ARGV[5] when its turn comes is skipped ("X"), not admitted. When no
-- seat is available and none is held the queue becomes SOLD_OUT. Every change is
-- published: {v, ph, at, a: [[ticket, pass id, expiry ms], ...], x: [skipped ticket, ...],
-- us: the tick's own time in Redis so far, in µs (Redis' clock, TIME)}.
--
-- Returns {"NOSTATE"} | {"FOLLOWER"} (another instance holds the lease) | {"WAIT"} (before
-- opensAt) | {"OPEN_DUE"} (opensAt has passed: open the sales, then call again with ARGV[4]
-- "1") | {"NOSEATS"} (no seat hash) | {"DONE", phase} (SOLD_OUT or CLOSED) | {"OK", phase,
-- admitted, skipped, waiting, passes in use, seats available, seats held, the tick's time
-- in Redis in µs}.
local started = redis.call('TIME')
local function elapsed() -- µs since the script started, by Redis' clock
  local t = redis.call('TIME')
  return (tonumber(t[1]) - tonumber(started[1])) * 1000000 + tonumber(t[2]) - tonumber(started[2])
end
if redis.call('EXISTS', KEYS[1]) == 0 then return {'NOSTATE'} end
local holder = redis.call('GET', KEYS[7])
if holder and holder ~= ARGV[2] then return {'FOLLOWER'} end
redis.call('SET', KEYS[7], ARGV[2], 'PX', ARGV[3])

local now = tonumber(ARGV[1])
local c = redis.call('HMGET', KEYS[1], 'phase', 'opensAt', 'rate', 'maxActive', 'passMs', 'party',
  'epoch', 'credit', 'tickAt', 'passes', 'lostUntil')
local phase = c[1]
if phase == 'SOLD_OUT' or phase == 'CLOSED' then return {'DONE', phase} end
local rate, maxActive, passMs, party = tonumber(c[3]), tonumber(c[4]), tonumber(c[5]), tonumber(c[6])
local burst = math.max(1, rate / 60)
local credit, tickAt = tonumber(c[8] or '0'), tonumber(c[9] or '0')
local changed = false
if phase == 'PREQUEUE' then
  if now < tonumber(c[2]) then return {'WAIT'} end
  if ARGV[4] ~= '1' then return {'OPEN_DUE'} end
  phase, credit, tickAt, changed = 'OPEN', burst, now, true
  redis.call('HSET', KEYS[1], 'phase', 'OPEN', 'openedAt', ARGV[1])
end

-- The seats available and held: counted over the seat hash (reading a 2,000-seat hash is
-- most of a tick's time), or kept from the last count while the seat-map version, which
-- every change of a seat bumps, is the same.
local ver = redis.call('GET', KEYS[10])
local inv = redis.call('HMGET', KEYS[1], 'invVer', 'invAvail', 'invHeld')
local avail, held = tonumber(inv[2]), tonumber(inv[3])
if not ver or inv[1] ~= ver or redis.call('EXISTS', KEYS[9]) == 0 then
  local seats = redis.call('HVALS', KEYS[9])
  if #seats == 0 then return {'NOSEATS'} end
  avail, held = 0, 0
  for _, v in ipairs(seats) do
    if v == '0' then
      avail = avail + 1
    elseif string.byte(v, 1) == 49 then -- "1|TOKEN|ms": held
      held = held + 1
    end
  end
  if ver then redis.call('HSET', KEYS[1], 'invVer', ver, 'invAvail', avail, 'invHeld', held) end
end

local function publish(msg)
  msg.v, msg.ph, msg.at, msg.us = redis.call('HINCRBY', KEYS[1], 'v', 1), phase, ARGV[1], elapsed()
  redis.call('PUBLISH', KEYS[8], cjson.encode(msg))
end

if avail == 0 and held == 0 then
  phase = 'SOLD_OUT'
  redis.call('HSET', KEYS[1], 'phase', phase, 'soldOutAt', ARGV[1])
  publish({})
  return {'DONE', phase}
end

if now > tickAt then
  credit = math.min(burst, credit + (now - tickAt) * rate / 60000)
  tickAt = now
end
redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', ARGV[1]) -- expired passes are no longer in use
local inUse = redis.call('ZCARD', KEYS[5])
if c[11] and now < tonumber(c[11]) then
  inUse = math.max(inUse, maxActive) -- passes of a lost state may be in use: assume the cap is reached
end
local room = math.min(math.floor(credit), maxActive - inUse, math.ceil(avail / party) - inUse)

local admitted, skipped, a, x = 0, 0, {}, {}
local passes = tonumber(c[10] or '0')
local absentBefore, maxSkips = now - tonumber(ARGV[5]), tonumber(ARGV[6])
while admitted < room and skipped < maxSkips do
  local head = redis.call('ZPOPMIN', KEYS[2])
  if #head == 0 then break end
  local tnum = string.match(head[1], ':(%d+)$')
  local rec = redis.call('HGET', KEYS[3], tnum)
  if rec then
    local t = cjson.decode(rec)
    if tonumber(redis.call('HGET', KEYS[4], tnum) or t.j) < absentBefore then
      t.s, t.m = 'X', nil
      skipped = skipped + 1
      x[skipped] = tnum
    else
      passes = passes + 1
      local pid = c[7] .. '.' .. string.format('%.0f', passes)
      local exp = string.format('%.0f', math.floor((now + passMs) / 1000) * 1000)
      redis.call('ZADD', KEYS[5], exp, pid)
      t.s, t.m, t.p, t.x, t.a = 'A', nil, pid, exp, ARGV[1]
      admitted = admitted + 1
      a[admitted] = {tnum, pid, exp}
    end
    redis.call('HSET', KEYS[3], tnum, cjson.encode(t))
  end
end

-- The measured rate: admissions over the samples of about the last minute.
local total = string.format('%.0f', passes)
redis.call('LPUSH', KEYS[6], ARGV[1] .. ':' .. total)
redis.call('LTRIM', KEYS[6], 0, 60)
local oldest = redis.call('LINDEX', KEYS[6], -1)
local t0, n0 = string.match(oldest, '^(%d+):(%d+)$')
local measured = ''
if tonumber(t0) < now then
  measured = string.format('%.3f', (passes - tonumber(n0)) * 1000 / (now - tonumber(t0)))
end
redis.call('HSET', KEYS[1], 'credit', string.format('%.6f', credit - admitted), 'tickAt', string.format('%.0f', tickAt),
  'passes', total, 'measured', measured)

if admitted > 0 or skipped > 0 or changed then
  local msg = {}
  if admitted > 0 then msg.a = a end
  if skipped > 0 then msg.x = x end
  publish(msg)
end
return {'OK', phase, admitted, skipped, redis.call('ZCARD', KEYS[2]), inUse + admitted, avail, held, elapsed()}
