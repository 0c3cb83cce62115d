-- recount: sets one user's seat count of a showtime (the reconciler's limit recount), but
-- only if it still has the value the reconciler read: a hold or release that ran since
-- wins, and the next run looks again.
--
-- KEYS[1] limits hash
-- ARGV[1] user id
-- ARGV[2] the count the caller read (0 when absent)
-- ARGV[3] the count to set (0 deletes the field)
--
-- Returns 1 when it set the count, 0 when the count had changed meanwhile.
local user = ARGV[1]
local current = tonumber(redis.call('HGET', KEYS[1], user) or '0')
if current ~= tonumber(ARGV[2]) then
  return 0
end
local want = tonumber(ARGV[3])
if want <= 0 then
  redis.call('HDEL', KEYS[1], user)
else
  redis.call('HSET', KEYS[1], user, want)
end
return 1
