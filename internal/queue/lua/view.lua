-- view.lua is put in front of join.lua and ticket.lua (scripts.go): the reply that shows
-- one ticket to its holder. A ticket is JSON: u its user, s its status ("W" waiting, "A"
-- admitted, "S" its pass used up or given back, "X" skipped as absent, "O" made while the
-- queue was SOLD_OUT or CLOSED, outside the queue), j when it joined (ms), m its member of
-- the waiting set while it waits, and once admitted p its pass id, x the pass's expiry and
-- a the admission (ms). Numbers are strings: a Lua number holds 53 bits.
--
-- view(queue hash, waiting set, ticket number, ticket JSON) is {"TICKET", ticket number,
-- ticket JSON, phase, entrants waiting, rank in the waiting set or -1, admissions per
-- second measured over the last minute or ""}.
local function view(qkey, wkey, tnum, rec)
  local q = redis.call('HMGET', qkey, 'phase', 'measured')
  local t = cjson.decode(rec)
  local rank = -1
  if t.s == 'W' and t.m then
    rank = redis.call('ZRANK', wkey, t.m) or -1
  end
  return {'TICKET', tnum, rec, q[1], redis.call('ZCARD', wkey), rank, q[2] or ''}
end
