-- snapshot: reads the seat hash and its version at one instant.
--
-- KEYS[1] seats hash, KEYS[2] version
-- ARGV    none
--
-- Returns {version as a string ("0" if unset), {seat id, state, seat id, state, ...}}.
return {redis.call('GET', KEYS[2]) or '0', redis.call('HGETALL', KEYS[1])}
