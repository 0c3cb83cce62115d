-- store: writes a rebuilt catalog envelope, but only while the rebuilder still holds the
-- key's rebuild lock. Invalidate deletes the lock with the envelope, so a rebuild that read
-- the database before a write committed cannot put the old value back afterwards.
--
-- KEYS[1]  the rebuild lock (keys.CacheLock); same hash slot as KEYS[2]
-- KEYS[2]  the envelope (keys.Cache)
-- ARGV[1]  the rebuilder's lock token
-- ARGV[2]  the envelope JSON
-- ARGV[3]  its physical TTL in milliseconds
--
-- Returns 1 if written, 0 if the lock was gone or another request's.
if redis.call("GET", KEYS[1]) == ARGV[1] then
  redis.call("SET", KEYS[2], ARGV[2], "PX", ARGV[3])
  return 1
end
return 0
