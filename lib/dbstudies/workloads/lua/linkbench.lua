-- dbstudies LinkBench-like workload for sysbench 1.0, written by us from the LinkBench paper
-- (Armstrong et al., SIGMOD 2013): Facebook's social graph as three tables — nodes, typed
-- links between them, and per (node, link type) counts of visible links — and its default
-- request mix. Not LinkBench itself: its degree and payload distributions are approximated
-- here by a power law and lognormals, with our own parameters.
--
-- Load: nodes 1..N (payload lognormal, median 128 B), each with an out-degree drawn from a
--   power law (P(d >= x) ~ x^-1.5, capped at 1000; mean ≈ 1.5) fixed by a hash of its id, so
--   that the request phase knows which links exist; link payloads lognormal, median 8 B.
--   `payload_compressibility` (0..1): the share of each payload that repeats a fixed
--   phrase (the rest is random letters) — it decides how well pages compress.
-- Requests: the paper's default mix; the node a request touches is drawn from a Zipf-like
--   law over ranks (exponents 0.8 link reads, 0.741 link writes, 0.625 node reads, 0.606
--   node writes), ranks scattered over ids by a fixed permutation; all seeded by sysbench.
-- Deadlocks and lock-wait timeouts restart the operation, counted per type (dbs_common).
local dbs = require("dbs_common")

sysbench.cmdline.options = {
   nodes = {"Number of nodes (the scale)", 10000},
   payload_compressibility = {"Share of each payload that repeats a phrase (0..1)", 0.5},
}

local LINK_TYPES, MAX_DEGREE, VISIBLE, HIDDEN = 2, 1000, 1, 0
local TYPES = {"get_link_list", "get_node", "add_link", "update_link", "update_node",
               "count_link", "delete_link", "add_node", "delete_node", "get_link"}
-- the paper's default mix, % of requests, in TYPES order
local MIX = {50.71, 12.93, 8.99, 8.01, 7.37, 4.89, 2.99, 2.57, 1.01, 0.53}
local ZIPF = {link_read = 0.8, link_write = 0.741, node_read = 0.625, node_write = 0.606}
local PHRASE = string.rep("the quick brown fox jumps over the lazy dog ", 8)
local rand = sysbench.rand.uniform

local SCHEMA = {
   {"nodetable", [[id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT, type INT UNSIGNED NOT NULL,
      version BIGINT UNSIGNED NOT NULL, time INT UNSIGNED NOT NULL, data MEDIUMTEXT NOT NULL,
      PRIMARY KEY (id)]]},
   {"linktable", [[id1 BIGINT UNSIGNED NOT NULL, id2 BIGINT UNSIGNED NOT NULL,
      link_type BIGINT UNSIGNED NOT NULL, visibility TINYINT NOT NULL, data VARCHAR(255) NOT NULL,
      time BIGINT UNSIGNED NOT NULL, version INT UNSIGNED NOT NULL,
      PRIMARY KEY (link_type, id1, id2),
      KEY id1_type (id1, link_type, visibility, time, id2, version, data)]]},
   {"counttable", [[id BIGINT UNSIGNED NOT NULL, link_type BIGINT UNSIGNED NOT NULL,
      count INT NOT NULL, time BIGINT UNSIGNED NOT NULL, version BIGINT UNSIGNED NOT NULL,
      PRIMARY KEY (id, link_type)]]},
}

-- ---------------------------------------------------------------- generators

local function hash01(a, b)
   -- a deterministic number in [0, 1) from two integers (no RNG state: load and requests agree)
   local h = bit.tobit(a * 374761393 + b * 668265263)  -- exact: both products < 2^53
   for _ = 1, 2 do  -- xorshift32 rounds: bit operations only, exact in LuaJIT
      h = bit.bxor(h, bit.lshift(h, 13))
      h = bit.bxor(h, bit.rshift(h, 17))
      h = bit.bxor(h, bit.lshift(h, 5))
   end
   return (h % 2147483647) / 2147483647
end

function degree(id)
   -- a node's out-degree at load: power law, P(d >= x) ~ x^-1.5 from 1, minus 1, capped
   local u = hash01(id, 7)
   return math.min(MAX_DEGREE, math.floor((1 - u) ^ (-1 / 1.5)) - 1)
end

local N  -- nodes

function link_target(id1, i)
   -- the i-th link of node id1 at load: its id2 and link type
   return math.floor(hash01(id1, i + 101) * N) + 1, 1 + i % LINK_TYPES
end

local PRIMES = {999983, 1000003, 15485863}

local function permutation_prime(n)
   for _, p in ipairs(PRIMES) do
      if n % p ~= 0 then return p end
   end
end

local STEP  -- multiplier of the rank → id permutation

function zipf_rank(s, n)
   -- a rank in 1..n with P(rank = k) ~ k^-s (0 < s < 1): the continuous law's inverse CDF
   local u = sysbench.rand.uniform_double()
   local e = 1 - s
   return math.min(n, math.floor((1 + u * ((n + 1) ^ e - 1)) ^ (1 / e)))
end

function zipf_node(kind)
   -- a node id: a Zipf rank scattered over 1..N by a fixed permutation (hot nodes not adjacent)
   local r = zipf_rank(ZIPF[kind], N)
   return math.fmod((r - 1) * STEP, N) + 1
end

local function normal()
   local u1, u2 = sysbench.rand.uniform_double(), sysbench.rand.uniform_double()
   return math.sqrt(-2 * math.log(1 - u1)) * math.cos(2 * math.pi * u2)
end

function payload_length(median, cap)
   -- lognormal: median `median`, sigma 1, at least 1 byte, at most `cap`
   return math.max(1, math.min(cap, math.floor(median * math.exp(normal()) + 0.5)))
end

local REPEATED = string.rep(PHRASE, 30)  -- ≥ 8 KiB + a phrase: any payload's repeated part
local RANDOM  -- per thread, made on first use: 1 MiB of random letters

local function random_letters(n)
   -- n random letters: a slice at a random offset of the thread's buffer (a 16 KiB page
   -- holds slices of a 1 MiB buffer: they seldom overlap, so they do not compress away)
   if RANDOM == nil then
      RANDOM = sysbench.rand.string(string.rep("@", 1048576))
   end
   local at = rand(1, #RANDOM - n)
   return RANDOM:sub(at, at + n - 1)
end

function payload(len)
   -- `len` bytes: on average payload_compressibility of them repeat a phrase, the rest are
   -- random letters (two slices: cheap for the client, which must not be the bottleneck)
   local repeated = math.floor(len * sysbench.opt.payload_compressibility + sysbench.rand.uniform_double())
   repeated = math.min(len, repeated)
   local at = rand(1, #PHRASE)
   return REPEATED:sub(at, at + repeated - 1) .. random_letters(len - repeated)
end

local function quoted(s)
   return "'" .. s .. "'"  -- payloads are letters and spaces: nothing to escape
end

-- ---------------------------------------------------------------- prepare

local function setup()
   N = sysbench.opt.nodes
   STEP = permutation_prime(N)
end

function cmd_prepare()
   setup()
   local con = sysbench.sql.driver():connect()
   dbs.create_tables(con, SCHEMA)
   local threads = sysbench.opt.threads
   local first = math.floor(N * sysbench.tid / threads) + 1
   local last = math.floor(N * (sysbench.tid + 1) / threads)
   local now = os.time()
   con:bulk_insert_init("INSERT INTO nodetable (id, type, version, time, data) VALUES")
   for id = first, last do
      con:bulk_insert_next(string.format("(%d,%d,0,%d,'%s')", id, rand(1, 10), now,
                                         payload(payload_length(128, 8192))))
   end
   con:bulk_insert_done()
   con:bulk_insert_init("INSERT INTO linktable (id1, id2, link_type, visibility, data, time, version) VALUES")
   local counts = {}
   for id1 = first, last do
      local seen = {}
      for i = 0, degree(id1) - 1 do
         local id2, t = link_target(id1, i)
         local key = t * 4294967296 + id2
         if not seen[key] then  -- two draws of the same target: one link
            seen[key] = true
            con:bulk_insert_next(string.format("(%d,%d,%d,1,'%s',%d,0)", id1, id2, t,
                                               payload(payload_length(8, 255)), now - rand(0, 86400 * 30)))
            counts[#counts + 1] = {id1, t}
         end
      end
   end
   con:bulk_insert_done()
   con:bulk_insert_init("INSERT INTO counttable (id, link_type, count, time, version) VALUES")
   local per = {}  -- (id1, type) → its visible links
   for _, c in ipairs(counts) do
      local key = c[1] * LINK_TYPES + c[2]
      if per[key] == nil then per[key] = {c[1], c[2], 0} end
      per[key][3] = per[key][3] + 1
   end
   for _, v in pairs(per) do
      con:bulk_insert_next(string.format("(%d,%d,%d,%d,0)", v[1], v[2], v[3], now))
   end
   con:bulk_insert_done()
end

function cmd_selftest()
   -- samples of the generators for the driver's unit tests (N = 100,000): one JSON line
   N, STEP = 100000, permutation_prime(100000)
   local ranks, nodes, degrees, node_len, link_len = {}, {}, {}, {}, {}
   for i = 1, 20000 do
      ranks[i] = zipf_rank(0.8, N)
      nodes[i] = zipf_node("link_read")
      degrees[i] = degree(i)
      node_len[i] = payload_length(128, 8192)
      link_len[i] = payload_length(8, 255)
   end
   sysbench.opt.payload_compressibility = 0
   local random = payload(4096)
   sysbench.opt.payload_compressibility = 0.9
   local repetitive = payload(4096)
   io.write(string.format('{"kind":"selftest","ranks":[%s],"nodes":[%s],"degrees":[%s],' ..
                          '"node_lengths":[%s],"link_lengths":[%s],"random":"%s","repetitive":"%s"}\n',
                          table.concat(ranks, ","), table.concat(nodes, ","), table.concat(degrees, ","),
                          table.concat(node_len, ","), table.concat(link_len, ","), random, repetitive))
end

sysbench.cmdline.commands = {
   prepare = {cmd_prepare, sysbench.cmdline.PARALLEL_COMMAND},
   cleanup = {dbs.cleanup_command(SCHEMA)},
   selftest = {cmd_selftest},
}

-- ---------------------------------------------------------------- requests

local con

function thread_init()
   setup()
   con = sysbench.sql.driver():connect()  -- autocommit: a one-statement request is one round trip
   dbs.types(TYPES)
end

dbs.thread_hooks(function() return con end)

local function some_link(kind)
   -- a link that existed at load (its target and type): a node by the law of `kind`, one of
   -- its load-time links (a node without any gets a new target)
   local id1 = zipf_node(kind)
   local d = degree(id1)
   local id2, t = link_target(id1, d > 0 and rand(0, d - 1) or rand(d, d + 9))
   return id1, id2, t
end

local function visibility_for_update(id1, id2, t)
   return con:query_row(string.format("SELECT visibility FROM linktable WHERE link_type=%d AND id1=%d " ..
                                      "AND id2=%d FOR UPDATE", t, id1, id2))
end

local function count_delta(id1, t, delta)
   con:query(string.format("INSERT INTO counttable (id, link_type, count, time, version) VALUES " ..
                           "(%d,%d,%d,%d,0) ON DUPLICATE KEY UPDATE count=count+(%d), time=VALUES(time), " ..
                           "version=version+1", id1, t, math.max(delta, 0), os.time(), delta))
end

local function upsert_link(id1, id2, t)
   -- add_link / update_link: insert the link or make it visible with new data; a link that
   -- becomes visible adds one to its count, in the same transaction
   con:query("BEGIN")
   local vis = visibility_for_update(id1, id2, t)
   local data = quoted(payload(payload_length(8, 255)))
   if vis == nil then
      con:query(string.format("INSERT INTO linktable VALUES (%d,%d,%d,1,%s,%d,0)", id1, id2, t, data, os.time()))
      count_delta(id1, t, 1)
   else
      con:query(string.format("UPDATE linktable SET visibility=1, data=%s, time=%d, version=version+1 " ..
                              "WHERE link_type=%d AND id1=%d AND id2=%d", data, os.time(), t, id1, id2))
      if tonumber(vis) == HIDDEN then count_delta(id1, t, 1) end
   end
   con:query("COMMIT")
end

local OPS = {
   get_link_list = function()
      local id1 = zipf_node("link_read")
      con:query(string.format("SELECT id1, id2, link_type, visibility, data, time, version FROM linktable " ..
                              "WHERE id1=%d AND link_type=%d AND visibility=1 AND time >= 0 AND time <= %d " ..
                              "ORDER BY time DESC LIMIT 10000", id1, rand(1, LINK_TYPES), os.time()))
   end,
   get_node = function()
      con:query_row(string.format("SELECT id, type, version, time, data FROM nodetable WHERE id=%d",
                                  zipf_node("node_read")))
   end,
   add_link = function()
      local id1 = zipf_node("link_write")
      local d = degree(id1)
      local id2, t = link_target(id1, rand(0, d + 2))  -- mostly existing, some new
      upsert_link(id1, id2, t)
   end,
   update_link = function()
      upsert_link(some_link("link_write"))
   end,
   update_node = function()
      con:query(string.format("UPDATE nodetable SET version=version+1, time=%d, data=%s WHERE id=%d",
                              os.time(), quoted(payload(payload_length(128, 8192))),
                              zipf_node("node_write")))
   end,
   count_link = function()
      con:query_row(string.format("SELECT count FROM counttable WHERE id=%d AND link_type=%d",
                                  zipf_node("link_read"), rand(1, LINK_TYPES)))
   end,
   delete_link = function()
      -- hide a visible link (LinkBench's default delete) and take one from its count
      local id1, id2, t = some_link("link_write")
      con:query("BEGIN")
      if tonumber(visibility_for_update(id1, id2, t)) == VISIBLE then
         con:query(string.format("UPDATE linktable SET visibility=0, time=%d, version=version+1 " ..
                                 "WHERE link_type=%d AND id1=%d AND id2=%d", os.time(), t, id1, id2))
         count_delta(id1, t, -1)
      end
      con:query("COMMIT")
   end,
   add_node = function()
      con:query(string.format("INSERT INTO nodetable (type, version, time, data) VALUES (%d,0,%d,%s)",
                              rand(1, 10), os.time(), quoted(payload(payload_length(128, 8192)))))
   end,
   delete_node = function()
      con:query(string.format("DELETE FROM nodetable WHERE id=%d", zipf_node("node_write")))
   end,
   get_link = function()
      -- a multiget: 1-3 targets of one node and type
      local id1, id2, t = some_link("link_read")
      local ids = {id2}
      for k = 2, rand(1, 3) do ids[k] = select(2, link_target(id1, rand(0, math.max(0, degree(id1) - 1)))) end
      con:query(string.format("SELECT id1, id2, link_type, visibility, data, time, version FROM linktable " ..
                              "WHERE link_type=%d AND id1=%d AND id2 IN (%s)", t, id1, table.concat(ids, ",")))
   end,
}

local CUMULATIVE = {}
do
   local sum = 0
   for i, share in ipairs(MIX) do
      sum = sum + share
      CUMULATIVE[i] = sum
   end
end
local pending

function event()
   local kind = pending
   if kind == nil then
      local r = sysbench.rand.uniform_double() * CUMULATIVE[#CUMULATIVE]
      for i, c in ipairs(CUMULATIVE) do
         if r < c then kind = TYPES[i] break end
      end
      kind = kind or TYPES[#TYPES]
   end
   pending = kind
   dbs.begin(kind)
   OPS[kind]()
   pending = nil
   dbs.finish(false)
end
