-- spend: ends a user's admission pass once an order held with it was paid or cancelled
-- (a pass is in use until it expires or then): the pass stops letting its holder hold, and
-- its place among the passes in use goes to the next entrant.
--
-- KEYS[1] tickets hash, KEYS[2] users hash, KEYS[3] passes in use
-- ARGV[1] user id
-- ARGV[2] when the order was held (ms): a pass admitted after it is not that order's
--
-- Returns 1 when a pass was ended, 0 when the user had none in use (a repeat is harmless).
local tnum = redis.call('HGET', KEYS[2], ARGV[1])
local rec = tnum and redis.call('HGET', KEYS[1], tnum)
if not rec then return 0 end
local t = cjson.decode(rec)
if t.s ~= 'A' or tonumber(t.a) > tonumber(ARGV[2]) then return 0 end
redis.call('ZREM', KEYS[3], t.p)
t.s = 'S'
redis.call('HSET', KEYS[1], tnum, cjson.encode(t))
return 1
