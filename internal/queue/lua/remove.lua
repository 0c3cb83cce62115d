-- remove: deletes a showtime's on-sale queue before it opened (removeOnSaleQueue), and
-- tells its subscribers.
--
-- KEYS[1 ..] the queue's keys, then (last) its events channel
--
-- Returns the number of keys deleted.
local n = 0
for i = 1, #KEYS - 1 do
  n = n + redis.call('DEL', KEYS[i])
end
redis.call('PUBLISH', KEYS[#KEYS], cjson.encode({removed = true}))
return n
