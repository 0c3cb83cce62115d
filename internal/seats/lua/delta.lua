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
