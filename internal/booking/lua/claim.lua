-- claim: takes the orders due by now out of the expiry queue, in one step, so each due
-- order is claimed by exactly one worker.
--
-- KEYS[1] expiry queue (keys.OrdersExpiry, a zset: member order id, score expires_at ms)
-- ARGV[1] now in ms, ARGV[2] the most members to claim
--
-- Returns the claimed members (order ids as strings), earliest first; an empty list when
-- none is due.
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
if #due > 0 then
  redis.call('ZREM', KEYS[1], unpack(due))
end
return due
