-- seen: marks the holders of tickets seen (their instance streams the tickets to them).
--
-- KEYS[1] tickets hash, KEYS[2] seen hash
-- ARGV[1] now in ms, ARGV[2 ..] ticket numbers
--
-- Returns how many of the tickets still exist (those are marked; a ticket gone is not
-- brought back as a seen mark).
local n = 0
for i = 2, #ARGV do
  if redis.call('HEXISTS', KEYS[1], ARGV[i]) == 1 then
    redis.call('HSET', KEYS[2], ARGV[i], ARGV[1])
    n = n + 1
  end
end
return n
