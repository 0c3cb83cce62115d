-- setup: creates the state of a showtime's on-sale queue in Redis, or updates its settings.
--
-- KEYS[1] queue hash, KEYS[2] waiting set, KEYS[3] tickets hash, KEYS[4] users hash,
-- KEYS[5] seen hash, KEYS[6] passes in use, KEYS[7] rate samples, KEYS[8] lease
-- ARGV[1] "set" (setOnSaleQueue) or "rebuild" (the state is missing: Redis lost it)
-- ARGV[2] now in ms
-- ARGV[3] the phase a new state starts in (PREQUEUE; on a rebuild OPEN once opensAt has
--         passed, CLOSED once the queue closed)
-- ARGV[4] opensAt (ms), ARGV[5] admitPerMinute, ARGV[6] maxActive, ARGV[7] the pass length
--         (ms), ARGV[8] averagePartySize, ARGV[9] the draw commitment, ARGV[10] the seed
--         (hex), ARGV[11] the epoch (the builds of the state, counted in MySQL)
--
-- "set" updates the settings of the queue with this commitment (phase, entrants and
-- counters kept), or creates it; a state of another commitment (a removed queue's keys,
-- left behind) is deleted first. "rebuild" creates the state only when it is missing; an
-- OPEN one starts with the passes in use unknown until one pass length from now (those of
-- the lost state may still be used: admission waits for them), and no entrant.
--
-- Returns {"CREATED"} | {"UPDATED"} | {"EXISTS"} (a rebuild found the state).
local commitment = redis.call('HGET', KEYS[1], 'commitment')
if commitment and ARGV[1] == 'rebuild' then return {'EXISTS'} end
local settings = {'opensAt', ARGV[4], 'rate', ARGV[5], 'maxActive', ARGV[6], 'passMs', ARGV[7], 'party', ARGV[8]}
if commitment == ARGV[9] then
  redis.call('HSET', KEYS[1], unpack(settings))
  return {'UPDATED'}
end
redis.call('DEL', unpack(KEYS))
redis.call('HSET', KEYS[1], unpack(settings))
redis.call('HSET', KEYS[1], 'phase', ARGV[3], 'commitment', ARGV[9], 'seed', ARGV[10], 'epoch', ARGV[11],
  'passes', '0', 'seq', '0', 'v', '0', 'credit', '0', 'tickAt', ARGV[2])
if ARGV[3] == 'OPEN' then
  redis.call('HSET', KEYS[1], 'openedAt', ARGV[2], 'lostUntil', tonumber(ARGV[2]) + tonumber(ARGV[7]))
end
return {'CREATED'}
