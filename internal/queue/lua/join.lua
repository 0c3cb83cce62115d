-- join: gives a user a ticket in a showtime's on-sale queue, or the one they have.
--
-- KEYS[1] queue hash, KEYS[2] waiting set, KEYS[3] tickets hash, KEYS[4] users hash,
-- KEYS[5] seen hash
-- ARGV[1] now in ms
-- ARGV[2] user id
-- ARGV[3] a new ticket number (random) for a new ticket
-- ARGV[4] that ticket's draw key (seatflow.DrawKey: 64 lowercase hex)
-- ARGV[5] the draw commitment the key was computed for
--
-- The user's ticket while it lives (waiting, admitted with its pass not expired, or made
-- outside the queue) is answered again and its holder marked seen. Otherwise a new ticket:
-- before the queue opens its place is its draw key (score: the key's first 13 hex digits,
-- 52 bits; member: the whole key then the number, so equal scores sort by the key too);
-- once open, behind everyone in arrival order (score 2^52 + arrival number); when the queue
-- is SOLD_OUT or CLOSED it is made outside the queue. A ticket that ended (expired, used
-- up, skipped) is replaced: its holder joins again, at the back.
--
-- Returns view(...) (view.lua) | {"NOQUEUE"} when the queue has no state | {"STALE"} when
-- its commitment is not ARGV[5] (the caller's seed is another queue's) | {"RETRY"} when the
-- ticket number is taken.
local now, user, tnum, key = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local q = redis.call('HMGET', KEYS[1], 'phase', 'commitment')
if not q[1] then return {'NOQUEUE'} end
if q[2] ~= ARGV[5] then return {'STALE'} end

local old = redis.call('HGET', KEYS[4], user)
if old then
  local rec = redis.call('HGET', KEYS[3], old)
  if rec then
    local t = cjson.decode(rec)
    if t.s == 'W' or t.s == 'O' or (t.s == 'A' and tonumber(t.x) > tonumber(now)) then
      redis.call('HSET', KEYS[5], old, now)
      return view(KEYS[1], KEYS[2], old, rec)
    end
  end
  redis.call('HDEL', KEYS[3], old)
  redis.call('HDEL', KEYS[5], old)
end
if redis.call('HEXISTS', KEYS[3], tnum) == 1 then return {'RETRY'} end

local t = {u = user, j = now}
if q[1] == 'PREQUEUE' then
  t.s, t.m = 'W', key .. ':' .. tnum
  redis.call('ZADD', KEYS[2], tonumber(string.sub(key, 1, 13), 16), t.m)
elseif q[1] == 'OPEN' then
  t.s, t.m = 'W', 'late:' .. tnum
  redis.call('ZADD', KEYS[2], 4503599627370496 + redis.call('HINCRBY', KEYS[1], 'seq', 1), t.m)
else
  t.s = 'O'
end
local rec = cjson.encode(t)
redis.call('HSET', KEYS[3], tnum, rec)
redis.call('HSET', KEYS[4], user, tnum)
redis.call('HSET', KEYS[5], tnum, now)
return view(KEYS[1], KEYS[2], tnum, rec)
