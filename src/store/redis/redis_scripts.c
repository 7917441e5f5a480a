/*
 * redis_scripts.c -- the Lua scripts of the Redis backend. Each runs
 * atomically on the server, which is what makes a multi-key write (record
 * hash, event list, index entries) all-or-nothing.
 *
 * Every script touches the keys of exactly one task plus global index keys,
 * all passed in KEYS (see redis.c for what Cluster would change). The
 * "#!lua" line (Redis 7) makes the server refuse a script up front when it
 * is out of memory, instead of failing at a write half-way through it.
 *
 * Index maintenance rules (redis.c has the key layout):
 *   leases    member iff the record is non-terminal with lease_until > 0,
 *             score lease_until
 *   finished  member iff the record is terminal, score finished_at
 *   tombs     member iff the key is a tombstone, score expired_at
 *   l:<p>     the list member stored in the record's "lm" field
 * sweep and purge repair a stale index entry they meet instead of tripping
 * on it again.
 */
#include "store/redis/redis_int.h"

/* clang-format off */
const char *const once__rd_lua[RD_NSCRIPT] = {
    /* KEYS: hash, events, leases, finished, list.
     * ARGV: member, list member, lease score|'', finished score|'', nf,
     *       nf field/value arguments, then the event payloads.
     * Returns 1, or the existing hash (HGETALL) when the key is taken. */
    [RD_CREATE] =
        "#!lua\n"
        "if redis.call('EXISTS', KEYS[1]) == 1 then\n"
        "  return redis.call('HGETALL', KEYS[1])\n"
        "end\n"
        "local nf = tonumber(ARGV[5])\n"
        "redis.call('HSET', KEYS[1], unpack(ARGV, 6, 5 + nf))\n"
        "redis.call('DEL', KEYS[2])\n"
        "local i = 6 + nf\n"
        "while i <= #ARGV do\n"
        "  local j = math.min(i + 499, #ARGV)\n"
        "  redis.call('RPUSH', KEYS[2], unpack(ARGV, i, j))\n"
        "  i = j + 1\n"
        "end\n"
        "if ARGV[3] ~= '' then redis.call('ZADD', KEYS[3], ARGV[3], ARGV[1]) end\n"
        "if ARGV[4] ~= '' then redis.call('ZADD', KEYS[4], ARGV[4], ARGV[1]) end\n"
        "redis.call('ZADD', KEYS[5], 0, ARGV[2])\n"
        "return 1\n",

    /* KEYS: as create. ARGV: member, list member, lease score|'',
     * finished score|'', expected version, base generation, nf, fields,
     * then the payloads of generations base+1 ...
     * Returns 1 (done), 0 (no record, or the version moved), or the stored
     * generation as a string when the events do not continue it. */
    [RD_UPDATE] =
        "#!lua\n"
        "local cur = redis.call('HMGET', KEYS[1], 'T', 'v', 'g', 'lm')\n"
        "if cur[1] or not cur[2] or cur[2] ~= ARGV[5] then return 0 end\n"
        "if cur[3] ~= ARGV[6] then return cur[3] end\n"
        "local nf = tonumber(ARGV[7])\n"
        "redis.call('HDEL', KEYS[1], 'x')\n"
        "redis.call('HSET', KEYS[1], unpack(ARGV, 8, 7 + nf))\n"
        "local i = 8 + nf\n"
        "while i <= #ARGV do\n"
        "  local j = math.min(i + 499, #ARGV)\n"
        "  redis.call('RPUSH', KEYS[2], unpack(ARGV, i, j))\n"
        "  i = j + 1\n"
        "end\n"
        "if ARGV[3] ~= '' then redis.call('ZADD', KEYS[3], ARGV[3], ARGV[1])\n"
        "else redis.call('ZREM', KEYS[3], ARGV[1]) end\n"
        "if ARGV[4] ~= '' then redis.call('ZADD', KEYS[4], ARGV[4], ARGV[1])\n"
        "else redis.call('ZREM', KEYS[4], ARGV[1]) end\n"
        "if cur[4] ~= ARGV[2] then\n"
        "  if cur[4] then redis.call('ZREM', KEYS[5], cur[4]) end\n"
        "  redis.call('ZADD', KEYS[5], 0, ARGV[2])\n"
        "end\n"
        "return 1\n",

    /* KEYS: hash, events, leases, finished, list, tombs.
     * ARGV: member, finished_before, now, tombstone TTL in ms (0 = none).
     * Returns 1 if the record became a tombstone. */
    [RD_ENTOMB] =
        "#!lua\n"
        "local r = redis.call('HMGET', KEYS[1], 'T', 's', 'fa', 'fd', 'lm', 'p', 'i')\n"
        "if r[1] or not r[2] or tonumber(r[2]) < 5 then\n"
        "  redis.call('ZREM', KEYS[4], ARGV[1])\n"
        "  return 0\n"
        "end\n"
        "if tonumber(r[3]) >= tonumber(ARGV[2]) then\n"
        "  redis.call('ZADD', KEYS[4], r[3], ARGV[1])\n"
        "  return 0\n"
        "end\n"
        "redis.call('DEL', KEYS[1], KEYS[2])\n"
        "redis.call('ZREM', KEYS[3], ARGV[1])\n"
        "redis.call('ZREM', KEYS[4], ARGV[1])\n"
        "if r[5] then redis.call('ZREM', KEYS[5], r[5]) end\n"
        "redis.call('HSET', KEYS[1], 'T', '1', 'p', r[6], 'i', r[7], 'fd', r[4] or '',\n"
        "           'fa', r[3], 'ea', ARGV[3])\n"
        "redis.call('ZADD', KEYS[6], ARGV[3], ARGV[1])\n"
        "if tonumber(ARGV[4]) > 0 then redis.call('PEXPIRE', KEYS[1], ARGV[4]) end\n"
        "return 1\n",

    /* KEYS: hash, events, tombs. ARGV: member, expired_before.
     * Returns 1 if a tombstone was deleted. */
    [RD_PURGE] =
        "#!lua\n"
        "local r = redis.call('HMGET', KEYS[1], 'T', 'ea')\n"
        "if not r[1] then\n"
        "  redis.call('ZREM', KEYS[3], ARGV[1])\n"
        "  return 0\n"
        "end\n"
        "if tonumber(r[2]) >= tonumber(ARGV[2]) then\n"
        "  redis.call('ZADD', KEYS[3], r[2], ARGV[1])\n"
        "  return 0\n"
        "end\n"
        "redis.call('DEL', KEYS[1], KEYS[2])\n"
        "redis.call('ZREM', KEYS[3], ARGV[1])\n"
        "return 1\n",

    /* KEYS: hash, events, leases, finished, list, tombs. ARGV: member.
     * One task's state in one atomic read: {HGETALL, LLEN, lease score,
     * finished score, 1 if its list member is indexed, tombs score} with ''
     * for a missing score. */
    [RD_CHECKKEY] =
        "#!lua\n"
        "local lm = redis.call('HGET', KEYS[1], 'lm')\n"
        "local inlist = 0\n"
        "if lm and redis.call('ZSCORE', KEYS[5], lm) then inlist = 1 end\n"
        "return {redis.call('HGETALL', KEYS[1]), redis.call('LLEN', KEYS[2]),\n"
        "        redis.call('ZSCORE', KEYS[3], ARGV[1]) or '',\n"
        "        redis.call('ZSCORE', KEYS[4], ARGV[1]) or '',\n"
        "        inlist, redis.call('ZSCORE', KEYS[6], ARGV[1]) or ''}\n",
};
/* clang-format on */
