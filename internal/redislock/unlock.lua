-- unlock: releases a lock (a catalog rebuild lock, a showtime lock, the reconciler lock),
-- but only if the caller still holds it. A holder whose lock expired (a load slower than
-- the lock TTL) must not delete the lock another request has taken since.
--
-- KEYS[1]  the lock key (keys.CacheLock, keys.ShowLock, keys.ReconcileLock)
-- ARGV[1]  the random token the holder stored with SET NX PX
--
-- Returns 1 if the lock was deleted, 0 if it was gone or held by another token.
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("DEL", KEYS[1])
end
return 0
