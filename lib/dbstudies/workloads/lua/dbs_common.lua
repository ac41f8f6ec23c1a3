-- dbstudies: what our own sysbench workloads share (tpcc.lua, linkbench.lua).
--
-- * A wall clock (CLOCK_REALTIME through LuaJIT's ffi) for latencies per transaction type.
-- * Per-type statistics of each sysbench thread: count, rollbacks (business rollbacks, such
--   as TPC-C's 1 % of New-Order), retries (an event restarted after a deadlock or lock-wait
--   timeout: sysbench's --mysql-ignore-errors list) and a log-bucket latency histogram.
--   Every second a thread that finished transactions prints their counts as one JSON line
--   {"kind":"types_interval",...}, by second since DBSTUDIES_T0 (the driver's start of the
--   run, epoch seconds; second k covers (k-1, k] like sysbench's report intervals); at its
--   end it prints its totals and histograms
--   {"kind":"types",...}. The driver (dbstudies.workloads.sysbench) sums them over threads.
-- * Random helpers: strings of a length range, NURand, a seeded Zipf sampler.
local ffi = require("ffi")
pcall(ffi.cdef, [[
typedef struct { long tv_sec; long tv_nsec; } dbs_timespec_t;
int clock_gettime(int clk_id, dbs_timespec_t *tp);
]])

local M = {}
local ts = ffi.new("dbs_timespec_t")

function M.now()
   ffi.C.clock_gettime(0, ts)  -- CLOCK_REALTIME: seconds since the epoch, like the driver's
   return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

local T0 = tonumber(os.getenv("DBSTUDIES_T0") or "") or M.now()

-- latency histogram: BUCKETS log-spaced buckets from 1 µs to 1000 s
local BUCKETS, LOW_MS, HIGH_MS = 600, 0.001, 1e6
local SCALE = BUCKETS / math.log(HIGH_MS / LOW_MS)

local function bucket(ms)
   if ms <= LOW_MS then return 0 end
   local b = math.floor(math.log(ms / LOW_MS) * SCALE)
   if b >= BUCKETS then return BUCKETS - 1 end
   return b
end

local function bucket_upper_ms(b)
   return LOW_MS * math.exp((b + 1) / SCALE)
end
M.bucket, M.bucket_upper_ms = bucket, bucket_upper_ms  -- dbs_openloop's histograms too

-- ---------------------------------------------------------------- per-type statistics

local stats = {names = {}, by_name = {}, second = nil, current = nil, started = nil,
               retrying = false}

function M.types(names)
   -- declare the transaction types, in report order
   stats.names = names
   for _, n in ipairs(names) do
      stats.by_name[n] = {count = 0, rollbacks = 0, retries = 0, sum_ms = 0, max_ms = 0,
                          hist = {}, interval = 0}
   end
end

function M.begin(name)
   -- start (or, after a restart, continue) a transaction of type `name`
   if not stats.retrying then
      stats.started = M.now()
   end
   stats.retrying = false
   stats.current = name
end

local function flush_interval(upto)
   -- print the counts of finished seconds before `upto`
   if stats.second == nil then
      stats.second = upto
      return
   end
   if upto <= stats.second then return end
   local parts = {}
   for _, n in ipairs(stats.names) do
      local s = stats.by_name[n]
      if s.interval > 0 then
         parts[#parts + 1] = string.format('"%s":%d', n, s.interval)
         s.interval = 0
      end
   end
   if #parts > 0 then
      io.write(string.format('{"kind":"types_interval","thread":%d,"second":%d,"counts":{%s}}\n',
                             sysbench.tid, stats.second, table.concat(parts, ",")))
      io.flush()
   end
   stats.second = upto
end

function M.finish(rolled_back)
   -- the current transaction ended (committed, or rolled back by its own logic)
   local t = M.now()
   local s = stats.by_name[stats.current]
   local ms = (t - stats.started) * 1000
   local sec = math.ceil(t - T0)
   if stats.second ~= nil and sec > stats.second then
      flush_interval(sec)
   elseif stats.second == nil then
      stats.second = sec
   end
   s.count = s.count + 1
   s.interval = s.interval + 1
   if rolled_back then s.rollbacks = s.rollbacks + 1 end
   s.sum_ms = s.sum_ms + ms
   if ms > s.max_ms then s.max_ms = ms end
   local b = bucket(ms)
   s.hist[b] = (s.hist[b] or 0) + 1
end

function M.retry(con)
   -- sysbench restarts the event after an ignorable error (deadlock, lock wait timeout):
   -- undo what the transaction did, count the retry, keep its start time
   pcall(con.query, con, "ROLLBACK")
   if stats.current ~= nil then
      local s = stats.by_name[stats.current]
      s.retries = s.retries + 1
   end
   stats.retrying = true
end

function M.report()
   -- a thread's totals and histograms, once at its end
   flush_interval(math.huge)
   local parts = {}
   for _, n in ipairs(stats.names) do
      local s = stats.by_name[n]
      local h = {}
      for b = 0, BUCKETS - 1 do
         if s.hist[b] then
            h[#h + 1] = string.format("[%.6g,%d]", bucket_upper_ms(b), s.hist[b])
         end
      end
      parts[#parts + 1] = string.format(
         '"%s":{"count":%d,"rollbacks":%d,"retries":%d,"sum_ms":%.6f,"max_ms":%.6f,"hist":[%s]}',
         n, s.count, s.rollbacks, s.retries, s.sum_ms, s.max_ms, table.concat(h, ","))
   end
   io.write(string.format('{"kind":"types","thread":%d,"types":{%s}}\n', sysbench.tid,
                          table.concat(parts, ",")))
   io.flush()
end

-- ---------------------------------------------------------------- tables and hooks

function M.create_tables(con, schema)
   -- schema: {{name, columns}, …}; InnoDB with the study's table options (compression …)
   for _, t in ipairs(schema) do
      con:query(string.format("CREATE TABLE IF NOT EXISTS %s (%s) ENGINE=InnoDB %s", t[1], t[2],
                              mysql_table_options or ""))
   end
end

function M.cleanup_command(schema)
   -- sysbench's `cleanup`: drop the workload's tables
   return function()
      local con = sysbench.sql.driver():connect()
      for _, t in ipairs(schema) do
         con:query("DROP TABLE IF EXISTS " .. t[1])
      end
   end
end

function M.thread_hooks(connection)
   -- what every request phase does around sysbench's threads: the thread's totals at its end,
   -- and a restarted event rolled back and counted (connection(): the thread's connection)
   thread_done = function()
      M.report()
      connection():disconnect()
   end
   sysbench.hooks.before_restart_event = function(err)
      M.retry(connection())
   end
end

-- ---------------------------------------------------------------- random helpers

local rand = sysbench.rand.uniform

function M.letters(min_len, max_len)
   -- a random alphanumeric string of a length in [min_len, max_len]
   return sysbench.rand.string(string.rep("@", rand(min_len, max_len)))
end

function M.digits(len)
   return sysbench.rand.string(string.rep("#", len))
end

function M.nurand(a, c, x, y)
   -- TPC-C 2.1.6: NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x
   return ((bit.bor(rand(0, a), rand(x, y)) + c) % (y - x + 1)) + x
end

function M.decimal(low, high, places)
   -- a random decimal in [low, high] with `places` digits after the point
   local f = 10 ^ places
   return rand(math.floor(low * f + 0.5), math.floor(high * f + 0.5)) / f
end

function M.sql_string(s)
   -- a quoted SQL literal (our generated strings hold no quotes; names from data might)
   return "'" .. string.gsub(s, "['\\]", "\\%0") .. "'"
end

return M
