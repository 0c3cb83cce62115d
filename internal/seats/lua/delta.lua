-- delta.lua is put in front of the scripts that publish a seat change (hold, confirm,
-- release, restore, block, unblock; scripts.go): their last ARGV is the caller's
-- traceparent, "" when the change is not traced.
local trace = ARGV[#ARGV]

-- delta is the message published: the version, the changes, when they were made (Redis'
-- clock, ms: one clock for every instance) and the trace context when there is one.
local function delta(ver, changes)
  local t = redis.call('TIME')
  local d = {version = ver, changes = changes, at = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)}
  if trace ~= '' then d.trace = trace end
  return d
end

-- returnedOrFree is the state and the published status of a seat that comes back: "0"
-- AVAILABLE, or, while the waiting list's count (key wl) says entries wait, "4|NOW_MS"
-- HELD: returned to the waiting list, which offers it before anyone may hold it.
local function returnedOrFree(wl)
  if tonumber(redis.call('GET', wl) or '0') > 0 then
    local t = redis.call('TIME')
    return '4|' .. (tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)), 'HELD'
  end
  return '0', 'AVAILABLE'
end
