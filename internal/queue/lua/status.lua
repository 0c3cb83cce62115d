-- status: a showtime's on-sale queue as admins and customers see it, at one instant.
--
-- KEYS[1] queue hash, KEYS[2] waiting set
--
-- Returns {phase, opensAt, admitPerMinute, maxActive, pass length (ms), averagePartySize,
-- passes issued, commitment, seed, entrants waiting} (the seed is the caller's to reveal
-- only once the phase allows it), or {} when the queue has no state.
local c = redis.call('HMGET', KEYS[1], 'phase', 'opensAt', 'rate', 'maxActive', 'passMs', 'party',
  'passes', 'commitment', 'seed')
if not c[1] then return {} end
c[10] = redis.call('ZCARD', KEYS[2])
return c
