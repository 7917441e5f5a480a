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
 *   l:<p>     the list member stored in the record's head (field "lm")
 *   c:<p>:<c> the same member, in the index of the record's context "c";
 *             the key depends on the stored record, so a script that
 *             removes an entry is told which context the caller read and
 *             answers {stored context} without writing when it differs
 *             (the caller sends it again with that context's key)
 *   pushq     member "<principal>\0<task_id>\0<config_id>" iff that delivery
 *             row is enabled and behind its target, score max(next_attempt_at,
 *             lease_until): the time from which it is due
 * sweep, purge and the push lease script repair a stale index entry they
 * meet instead of tripping on it again.
 *
 * Delivery rows (redis_push.c has the fields) are computed in C by
 * push_rows.c; scripts store them. Who writes what: a record write (create,
 * update, entomb) adds, drops and resets rows and sets every row's target,
 * all under the record's version check, so record writes never race each
 * other; claims and acks write a row's progress fields only (never since or
 * target, never a row that is gone), an ack as a compare-and-set of exactly
 * the fields its computation read. So a record write needs no retry however
 * busy the deliverers are, and an ack retries only when its own row moved.
 * After any change a row's pushq entry is recomputed here from the stored
 * fields (index_row), which is what keeps the index exact when a target
 * and a progress change cross.
 */
#include "store/redis/redis_int.h"

/* Lua helpers for the push hash KEYS h and index q of task member m
 * ("<principal>\0<task_id>"):
 *   index_row(h, q, m, id)  set id's pushq entry from its stored fields
 *   drop_rows(h, q, m, id)  drop row id with its entry (id nil: all rows)
 *   put_push(h, q, m, a)    apply the push section at ARGV[a] (redis_push.c
 *                           builds it): '-' drops every row, else counts
 *                           np nd ni, np HSET arguments, nd ids to drop, ni
 *                           ids to re-index. Returns the index after it. */
#define LUA_PUSH                                                                                   \
    "local function index_row(h, q, m, id)\n"                                                      \
    "  local p = id .. '\\0'\n"                                                                    \
    "  local r = redis.call('HMGET', h, p .. 'd', p .. 't', p .. 'x', p .. 'na', p .. 'u')\n"      \
    "  if r[1] and r[2] and r[3] == '0' and tonumber(r[1]) < tonumber(r[2]) then\n"               \
    "    local at = r[4]\n"                                                                        \
    "    if tonumber(r[5]) > tonumber(r[4]) then at = r[5] end\n"                                  \
    "    redis.call('ZADD', q, at, m .. '\\0' .. id)\n"                                            \
    "  else\n"                                                                                     \
    "    redis.call('ZREM', q, m .. '\\0' .. id)\n"                                                \
    "  end\n"                                                                                      \
    "end\n"                                                                                        \
    "local function drop_rows(h, q, m, id)\n"                                                      \
    "  local pre = id and (id .. '\\0')\n"                                                         \
    "  for _, f in ipairs(redis.call('HKEYS', h)) do\n"                                            \
    "    if pre then\n"                                                                            \
    "      if string.sub(f, 1, #pre) == pre then redis.call('HDEL', h, f) end\n"                   \
    "    elseif string.sub(f, -2) == '\\0s' then\n"                                                \
    "      redis.call('ZREM', q, m .. '\\0' .. string.sub(f, 1, -3))\n"                            \
    "    end\n"                                                                                    \
    "  end\n"                                                                                      \
    "  if pre then redis.call('ZREM', q, m .. '\\0' .. id) else redis.call('DEL', h) end\n"        \
    "end\n"                                                                                        \
    "local function put_push(h, q, m, a)\n"                                                        \
    "  if ARGV[a] == '-' then drop_rows(h, q, m, nil) return a + 1 end\n"                          \
    "  local np, nd, ni = tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])\n"       \
    "  local i = a + 3\n"                                                                          \
    "  for j = i + np, i + np + nd - 1 do drop_rows(h, q, m, ARGV[j]) end\n"                       \
    "  if np > 0 then redis.call('HSET', h, unpack(ARGV, i, i + np - 1)) end\n"                    \
    "  i = i + np + nd\n"                                                                          \
    "  for j = i, i + ni - 1 do index_row(h, q, m, ARGV[j]) end\n"                                 \
    "  return i + ni\n"                                                                            \
    "end\n"

/* Lua helper: head(h) splits a record's "h" field (layout 3, redis_keys.c)
 * into its values: [1] s, [2] v, [3] g, [4] f, [5] o, [6] fa, [7] c, [8] lm,
 * [9] fd (RD_HEAD_* + 1). Reading the small head, never the record's "r",
 * keeps what a version check or a renewal costs independent of the task's
 * size. */
#define LUA_HEAD                                                                                   \
    "local function head(h)\n"                                                                     \
    "  local t = {}\n"                                                                             \
    "  for x in string.gmatch(h, '([^%z]*)%z') do t[#t + 1] = x end\n"                            \
    "  return t\n"                                                                                 \
    "end\n"

/* clang-format off */
const char *const once__rd_lua[RD_NSCRIPT] = {
    /* KEYS: hash, events, leases, finished, list, push, pushq, context.
     * ARGV: member, list member, lease score|'', finished score|'', the
     * record's "r", "h" and "u", the push section (put_push; '-' when the
     * record has no push config), then the event payloads.
     * Returns 1, or the existing hash (HGETALL) when the key is taken.
     * Nothing is deleted first: a task key without its hash has no events
     * and no push rows (entomb and purge drop them with the record, and
     * the store needs maxmemory-policy noeviction), and every command less
     * is Redis CPU per task (issue #35). */
    [RD_CREATE] =
        "#!lua\n"
        LUA_PUSH
        "if redis.call('EXISTS', KEYS[1]) == 1 then\n"
        "  return redis.call('HGETALL', KEYS[1])\n"
        "end\n"
        "redis.call('HSET', KEYS[1], 'r', ARGV[5], 'h', ARGV[6], 'u', ARGV[7])\n"
        "local i = 9\n"
        "if ARGV[8] ~= '-' then i = put_push(KEYS[6], KEYS[7], ARGV[1], 8) end\n"
        "while i <= #ARGV do\n"
        "  local j = math.min(i + 499, #ARGV)\n"
        "  redis.call('RPUSH', KEYS[2], unpack(ARGV, i, j))\n"
        "  i = j + 1\n"
        "end\n"
        "if ARGV[3] ~= '' then redis.call('ZADD', KEYS[3], ARGV[3], ARGV[1]) end\n"
        "if ARGV[4] ~= '' then redis.call('ZADD', KEYS[4], ARGV[4], ARGV[1]) end\n"
        "redis.call('ZADD', KEYS[5], 0, ARGV[2])\n"
        "redis.call('ZADD', KEYS[8], 0, ARGV[2])\n"
        "return 1\n",

    /* KEYS: hash, events, leases, finished, list, push, pushq, the change
     * feed's channel (not a key), the new context's index, the stored
     * context's index. ARGV: member, list member, lease score|'',
     * finished score|'', expected version, base generation, the stored
     * context as the caller believes it, the record's "r", "h" and "u",
     * the push section (put_push), then the payloads of generations
     * base+1 ...
     * Returns 1 (done), 0 (no record, or the version moved), the stored
     * generation as a string when the events do not continue it, or
     * {stored context} when that is not ARGV[7]; only 1 writes. An update
     * with events PUBLISHes the member to the channel (redis_feed.c). */
    [RD_UPDATE] =
        "#!lua\n"
        LUA_PUSH
        LUA_HEAD
        "local cur = redis.call('HMGET', KEYS[1], 'T', 'h')\n"
        "if cur[1] or not cur[2] then return 0 end\n"
        "local hd = head(cur[2])\n"
        "if hd[2] ~= ARGV[5] then return 0 end\n"
        "if hd[3] ~= ARGV[6] then return hd[3] end\n"
        "if hd[7] ~= ARGV[7] then return {hd[7] or ''} end\n"
        "redis.call('HSET', KEYS[1], 'r', ARGV[8], 'h', ARGV[9], 'u', ARGV[10])\n"
        "local i = put_push(KEYS[6], KEYS[7], ARGV[1], 11)\n"
        "local told = i <= #ARGV\n"
        "while i <= #ARGV do\n"
        "  local j = math.min(i + 499, #ARGV)\n"
        "  redis.call('RPUSH', KEYS[2], unpack(ARGV, i, j))\n"
        "  i = j + 1\n"
        "end\n"
        "if told then redis.call('PUBLISH', KEYS[8], ARGV[1]) end\n"
        "if ARGV[3] ~= '' then redis.call('ZADD', KEYS[3], ARGV[3], ARGV[1])\n"
        "else redis.call('ZREM', KEYS[3], ARGV[1]) end\n"
        "if ARGV[4] ~= '' then redis.call('ZADD', KEYS[4], ARGV[4], ARGV[1])\n"
        "else redis.call('ZREM', KEYS[4], ARGV[1]) end\n"
        "if hd[8] ~= ARGV[2] or KEYS[9] ~= KEYS[10] then\n"
        "  if hd[8] then\n"
        "    redis.call('ZREM', KEYS[5], hd[8])\n"
        "    redis.call('ZREM', KEYS[10], hd[8])\n"
        "  end\n"
        "  redis.call('ZADD', KEYS[5], 0, ARGV[2])\n"
        "  redis.call('ZADD', KEYS[9], 0, ARGV[2])\n"
        "end\n"
        "return 1\n",

    /* KEYS: hash, events, leases, finished, list, tombs, push, pushq,
     * context. ARGV: member, finished_before, now, tombstone TTL in ms
     * (0 = none), the record's context as the caller read it.
     * Returns 1 if the record became a tombstone, {stored context} (nothing
     * written) when that is not ARGV[5]. */
    [RD_ENTOMB] =
        "#!lua\n"
        LUA_PUSH
        LUA_HEAD
        "local r = redis.call('HMGET', KEYS[1], 'T', 'h')\n"
        "local hd = r[2] and head(r[2]) or {}\n"
        "if r[1] or not hd[1] or tonumber(hd[1]) < 5 then\n"
        "  redis.call('ZREM', KEYS[4], ARGV[1])\n"
        "  return 0\n"
        "end\n"
        "if tonumber(hd[6]) >= tonumber(ARGV[2]) then\n"
        "  redis.call('ZADD', KEYS[4], hd[6], ARGV[1])\n"
        "  return 0\n"
        "end\n"
        "if hd[7] ~= ARGV[5] then return {hd[7] or ''} end\n"
        "local p, i = string.match(ARGV[1], '^([^%z]*)%z(.*)$')\n"
        "redis.call('DEL', KEYS[1], KEYS[2])\n"
        "drop_rows(KEYS[7], KEYS[8], ARGV[1], nil)\n"
        "redis.call('ZREM', KEYS[3], ARGV[1])\n"
        "redis.call('ZREM', KEYS[4], ARGV[1])\n"
        "redis.call('ZREM', KEYS[5], hd[8])\n"
        "redis.call('ZREM', KEYS[9], hd[8])\n"
        "redis.call('HSET', KEYS[1], 'T', '1', 'p', p, 'i', i, 'fd', hd[9],\n"
        "           'fa', hd[6], 'ea', ARGV[3])\n"
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

    /* KEYS: hash, events, leases, finished, list, tombs, push, pushq,
     * context. ARGV: member. One task's state in one atomic read: {HGETALL,
     * LLEN, lease score, finished score, 1 if its list member is indexed,
     * tombs score, HGETALL of the push hash, {config id, pushq score} per
     * row, 1 if its list member is in the context index} with '' for a
     * missing score. */
    [RD_CHECKKEY] =
        "#!lua\n"
        LUA_HEAD
        "local h = redis.call('HGET', KEYS[1], 'h')\n"
        "local lm = h and head(h)[8]\n"
        "local inlist, inctx = 0, 0\n"
        "if lm and redis.call('ZSCORE', KEYS[5], lm) then inlist = 1 end\n"
        "if lm and redis.call('ZSCORE', KEYS[9], lm) then inctx = 1 end\n"
        "local scores = {}\n"
        "for _, f in ipairs(redis.call('HKEYS', KEYS[7])) do\n"
        "  if string.sub(f, -2) == '\\0s' then\n"
        "    local id = string.sub(f, 1, -3)\n"
        "    scores[#scores + 1] = id\n"
        "    scores[#scores + 1] = redis.call('ZSCORE', KEYS[8], ARGV[1] .. '\\0' .. id) or ''\n"
        "  end\n"
        "end\n"
        "return {redis.call('HGETALL', KEYS[1]), redis.call('LLEN', KEYS[2]),\n"
        "        redis.call('ZSCORE', KEYS[3], ARGV[1]) or '',\n"
        "        redis.call('ZSCORE', KEYS[4], ARGV[1]) or '',\n"
        "        inlist, redis.call('ZSCORE', KEYS[6], ARGV[1]) or '',\n"
        "        redis.call('HGETALL', KEYS[7]), scores, inctx}\n",

    /* KEYS: push, pushq. ARGV: task member, config id, owner, now,
     * lease_until. Lease the row if it is due now (store.h: enabled, behind
     * its target, next_attempt_at <= now, lease free or run out): returns
     * {delivered, target, attempts}. Otherwise 0, with the row's pushq entry
     * set right (gone, or re-scored to when it will be due). */
    [RD_PUSH_LEASE] =
        "#!lua\n"
        LUA_PUSH
        "local p = ARGV[2] .. '\\0'\n"
        "local r = redis.call('HMGET', KEYS[1], p .. 'd', p .. 't', p .. 'x', p .. 'na',\n"
        "                     p .. 'u', p .. 'a')\n"
        "local now = tonumber(ARGV[4])\n"
        "if not (r[1] and r[2] and r[3] == '0' and tonumber(r[1]) < tonumber(r[2])\n"
        "        and tonumber(r[4]) <= now and tonumber(r[5]) <= now) then\n"
        "  index_row(KEYS[1], KEYS[2], ARGV[1], ARGV[2])\n"
        "  return 0\n"
        "end\n"
        "redis.call('HSET', KEYS[1], p .. 'o', ARGV[3], p .. 'u', ARGV[5])\n"
        "index_row(KEYS[1], KEYS[2], ARGV[1], ARGV[2])\n"
        "return {r[1], r[2], r[6]}\n",

    /* KEYS: push, pushq. ARGV: task member, config id, n, then n (field,
     * value read, value to write) triples. Compare-and-set: writes the new
     * values only if every field still holds the value read (a missing row
     * holds none). Returns 1, or 0 with nothing written. */
    [RD_PUSH_PUT] =
        "#!lua\n"
        LUA_PUSH
        "local n = tonumber(ARGV[3])\n"
        "local f, set = {}, {}\n"
        "for i = 0, n - 1 do\n"
        "  f[#f + 1] = ARGV[4 + 3 * i]\n"
        "  set[#set + 1] = ARGV[4 + 3 * i]\n"
        "  set[#set + 1] = ARGV[6 + 3 * i]\n"
        "end\n"
        "local cur = redis.call('HMGET', KEYS[1], unpack(f))\n"
        "for i = 0, n - 1 do\n"
        "  if cur[i + 1] ~= ARGV[5 + 3 * i] then return 0 end\n"
        "end\n"
        "redis.call('HSET', KEYS[1], unpack(set))\n"
        "index_row(KEYS[1], KEYS[2], ARGV[1], ARGV[2])\n"
        "return 1\n",

    /* KEYS: hash, leases. ARGV: member, owner, fence, until (> 0).
     * Sets the record's lease_until and its leases score if the record has
     * that fence and owner and a renewable state (once__state_renewable:
     * "1" or "2"), touching nothing else, so its cost does not depend on
     * the record's size. Numbers are compared as the decimal strings both
     * sides format alike. Returns 1 (renewed), 0 (a live record that did
     * not match) or -1 (no record, or a tombstone). */
    [RD_RENEW] =
        "#!lua\n"
        LUA_HEAD
        "local r = redis.call('HMGET', KEYS[1], 'T', 'h')\n"
        "if r[1] or not r[2] then return -1 end\n"
        "local hd = head(r[2])\n"
        "if hd[4] ~= ARGV[3] or hd[5] ~= ARGV[2] or (hd[1] ~= '1' and hd[1] ~= '2') then\n"
        "  return 0\n"
        "end\n"
        "redis.call('HSET', KEYS[1], 'u', ARGV[4])\n"
        "redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1])\n"
        "return 1\n",

    /* KEYS: hash, context. ARGV: context, list member. The layout-2
     * migration (redis_schema.c): index the record in its context if the
     * hash is still a record of that context and list member, as the
     * caller read it. Returns 1 if it was indexed (again), 0 if not. */
    [RD_CTX_ADD] =
        "#!lua\n"
        "local r = redis.call('HMGET', KEYS[1], 'T', 'c', 'lm')\n"
        "if r[1] or r[2] ~= ARGV[1] or r[3] ~= ARGV[2] then return 0 end\n"
        "redis.call('ZADD', KEYS[2], 0, ARGV[2])\n"
        "return 1\n",

    /* KEYS: hash. The layout-3 migration (redis_schema.c): repack a
     * record hash of layout 1 or 2 (every field under its own name) into
     * "h", "r" and "u" (redis_keys.c: the same bytes once writes). Returns
     * 1 if it did; 0 for a tombstone, a hash already packed, one gone, or
     * one missing a field (left as it is, for the check to report). */
    [RD_REPACK] =
        "#!lua\n"
        "local all = redis.call('HGETALL', KEYS[1])\n"
        "local f = {}\n"
        "for j = 1, #all, 2 do f[all[j]] = all[j + 1] end\n"
        "if f.T or f.h or f.r then return 0 end\n"
        "if not (f.p and f.i and f.k and f.n and f.ca and f.ua and f.d and f.j and f.u) then\n"
        "  return 0\n"
        "end\n"
        "local hb, rb = {}, {}\n"
        "for _, n in ipairs({'s', 'v', 'g', 'f', 'o', 'fa', 'c', 'lm', 'fd'}) do\n"
        "  if not f[n] then return 0 end\n"
        "  hb[#hb + 1] = f[n] .. '\\0'\n"
        "end\n"
        "for _, n in ipairs({'p', 'i', 'k', 'n', 'ca', 'ua', 'd', 'j', 'x', 'pj', 'jn'}) do\n"
        "  if f[n] then rb[#rb + 1] = n .. '\\0' .. f[n] .. '\\0' end\n"
        "end\n"
        "redis.call('DEL', KEYS[1])\n"
        "redis.call('HSET', KEYS[1], 'r', table.concat(rb), 'h', table.concat(hb), 'u', f.u)\n"
        "return 1\n",

    /* KEYS: the schema marker. ARGV: version. Raises the marker to the
     * version, never lowers it (a newer once may have marked it). */
    [RD_MARK] =
        "#!lua\n"
        "local v = tonumber(redis.call('GET', KEYS[1]) or '0') or 0\n"
        "if v < tonumber(ARGV[1]) then redis.call('SET', KEYS[1], ARGV[1]) end\n"
        "return 1\n",
};
/* clang-format on */
