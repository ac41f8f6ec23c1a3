-- dbstudies: open-loop load for any sysbench workload (loaded by sysbench_report.lua when
-- DBSTUDIES_RATE is set).
--
-- Why not sysbench's own --rate: sysbench 1.0.20 stamps a queued event with the time its
-- generator thread got to enqueue it (late whenever that thread is starved of CPU, which on a
-- small host under load is exactly when it matters), drops the events still queued when the
-- step ends (so the latency of a backlog is never counted), gives one percentile per interval,
-- and stops the whole run when its queue of 131072 events fills.
--
-- Here arrivals follow a schedule (Poisson or constant, DBSTUDIES_ARRIVALS, at DBSTUDIES_RATE
-- transactions/s) kept in memory shared by the worker threads of this process:
-- * the schedule starts when the first worker asks for work; arrivals are generated up to
--   "now" on demand, into a queue of scheduled times;
-- * a free worker takes the oldest due arrival, or the next one in the future and sleeps
--   until it is due: a pool of connections serving one queue, as an application would;
-- * a transaction's latency runs from its **scheduled** time to its end (queueing included),
--   so a stall is charged to every transaction that was due during it (no coordinated
--   omission); the wait before it started is recorded apart;
-- * per second (the second of the run in which it ended, like dbs_common's types) each
--   worker prints its count, sums and a log-bucket latency histogram:
--   {"kind":"ol_interval","thread":t,"second":s,"n":…,"sum_ms":…,"wait_sum_ms":…,"max_ms":…,"hist":[[upper_ms,count],…]}
-- * the reporter thread adds, every report interval, the arrivals due so far, started so
--   far and the queue of due arrivals not yet started:
--   {"kind":"ol_queue","time":…,"due":…,"started":…,"queued":…,"lag_ms":…}
-- * at the end, the arrivals due before the end that never started (with how long each had
--   waited: a lower bound of its latency):
--   {"kind":"ol_end","due":…,"started":…,"unstarted":…,"unstarted_hist":[[upper_ms,count],…],"dropped":…}
local ffi = require("ffi")
local common = require("dbs_common")

pcall(ffi.cdef, [[
typedef struct { long tv_sec; long tv_nsec; } dbs_ol_timespec_t;
typedef union { char size[40]; long align; } dbs_mutex_t;
typedef struct {
   dbs_mutex_t mu;
   double start;        /* the schedule's origin (0: not started) */
   double next;         /* the next arrival, not yet generated */
   double rate;
   int poisson;
   int started_flag;
   uint64_t rng;        /* the arrivals' random stream (an LCG: one stream for all threads) */
   /* counts as doubles (exact to 2^53): plain Lua numbers, no boxed 64-bit integers */
   double due;          /* arrivals generated */
   double started;      /* arrivals a worker took */
   double dropped;      /* arrivals lost because the queue was full */
   double head, tail, cap;
   double *queue;       /* scheduled times of generated, not yet started arrivals */
} dbs_ol_t;
int pthread_mutex_init(dbs_mutex_t *m, const void *attr);
int pthread_mutex_lock(dbs_mutex_t *m);
int pthread_mutex_unlock(dbs_mutex_t *m);
void *calloc(size_t n, size_t size);
int setenv(const char *name, const char *value, int overwrite);
int clock_nanosleep(int clk, int flags, const dbs_ol_timespec_t *t, dbs_ol_timespec_t *rem);
int prctl(int option, unsigned long arg2, unsigned long arg3, unsigned long arg4, unsigned long arg5);
]])

local M = {}
local QUEUE = 1048576  -- due arrivals waiting for a worker; more are counted as dropped
local ENV = "DBSTUDIES_OL_SHARED"

local T0 = tonumber(os.getenv("DBSTUDIES_T0") or "") or common.now()
-- the end of the step (sysbench's --time, counted from the driver's T0): no arrival is
-- scheduled at or after it, and no transaction starts after it
local STOP_AT = T0 + (tonumber(os.getenv("DBSTUDIES_DURATION") or "") or math.huge)

M.rate = tonumber(os.getenv("DBSTUDIES_RATE") or "")
M.poisson = (os.getenv("DBSTUDIES_ARRIVALS") or "poisson") ~= "constant"

function M.create()
   -- once, in the main thread before any worker starts (sysbench's init())
   local s = ffi.cast("dbs_ol_t *", ffi.C.calloc(1, ffi.sizeof("dbs_ol_t")))
   assert(s ~= nil, "dbs_openloop: out of memory")
   s.queue = ffi.cast("double *", ffi.C.calloc(QUEUE, ffi.sizeof("double")))
   assert(s.queue ~= nil, "dbs_openloop: out of memory for the queue")
   ffi.C.pthread_mutex_init(s.mu, nil)
   s.rate, s.poisson, s.cap = M.rate, M.poisson and 1 or 0, QUEUE
   s.rng = tonumber(os.getenv("DBSTUDIES_OL_SEED") or "") or math.floor(common.now() * 1e6)
   ffi.C.setenv(ENV, tostring(tonumber(ffi.cast("uintptr_t", s))), 1)
end

local shared = nil
local function state()
   if shared == nil then
      local addr = os.getenv(ENV)
      assert(addr, "dbs_openloop: the shared schedule was not created (init() did not run)")
      shared = ffi.cast("dbs_ol_t *", ffi.cast("uintptr_t", tonumber(addr)))
   end
   return shared
end

local function uniform(s)
   -- [0, 1) from the shared stream (the caller holds the lock); each thread's own generator
   -- would not do: LuaJIT seeds every thread's math.random alike
   s.rng = s.rng * 6364136223846793005ULL + 1442695040888963407ULL
   return tonumber(s.rng / 2048ULL) / 9007199254740992
end

local function interarrival(s)
   if s.poisson == 1 then
      return -math.log(1 - uniform(s)) / s.rate
   end
   return 1 / s.rate
end

local function generate(s, upto)
   -- arrivals due by `upto` (never past the end) join the queue (the caller holds the lock)
   upto = math.min(upto, STOP_AT)
   while s.next <= upto and s.next < STOP_AT do
      local t = s.next
      s.next = t + interarrival(s)  -- drawn once: a redraw after each look would bias it
      s.due = s.due + 1
      if s.tail - s.head < s.cap then
         s.queue[s.tail % s.cap] = t
         s.tail = s.tail + 1
      else
         s.dropped = s.dropped + 1
      end
   end
end

local function take()
   -- the scheduled time of the arrival this worker serves next; nil: none before the end
   local s = state()
   ffi.C.pthread_mutex_lock(s.mu)
   local now = common.now()
   if s.started_flag == 0 then  -- the first arrival is due at once
      s.started_flag, s.start, s.next = 1, now, now
   end
   generate(s, now)
   local t
   if s.tail > s.head then
      t = s.queue[s.head % s.cap]
      s.head = s.head + 1
   else  -- nothing due: the next arrival is this worker's, in the future
      t = s.next
      if t >= STOP_AT then
         ffi.C.pthread_mutex_unlock(s.mu)
         return nil
      end
      s.next, s.due = t + interarrival(s), s.due + 1
   end
   s.started = s.started + 1
   ffi.C.pthread_mutex_unlock(s.mu)
   return t
end

function M.snapshot(upto)
   -- the queue as of `upto` (default now): due, started, queued, lag of the oldest queued
   local s = state()
   ffi.C.pthread_mutex_lock(s.mu)
   local now = upto or common.now()
   if s.started_flag == 1 then generate(s, now) end
   local queued = tonumber(s.tail - s.head)
   local lag = queued > 0 and (now - s.queue[s.head % s.cap]) or 0
   local out = {due = tonumber(s.due), started = tonumber(s.started), queued = queued,
                lag_ms = lag * 1000, dropped = tonumber(s.dropped), now = now,
                window = s.started_flag == 1 and (now - s.start) or 0}
   if upto then  -- the end: how long each unstarted arrival had waited
      local waits = {}
      for i = tonumber(s.head), tonumber(s.tail) - 1 do
         waits[#waits + 1] = (now - s.queue[i % tonumber(s.cap)]) * 1000
      end
      out.waits = waits
   end
   ffi.C.pthread_mutex_unlock(s.mu)
   return out
end

local ts = ffi.new("dbs_ol_timespec_t")
local function sleep_until(t)
   local sec = math.floor(t)
   ts.tv_sec, ts.tv_nsec = sec, math.floor((t - sec) * 1e9)
   ffi.C.clock_nanosleep(0, 1, ts, nil)  -- CLOCK_REALTIME, TIMER_ABSTIME
end

-- ---------------------------------------------------------------- per-thread latency

local cur = {second = nil, n = 0, sum_ms = 0, wait_sum_ms = 0, max_ms = 0, hist = {}}

local function hist_json(hist)
   local keys = {}
   for b in pairs(hist) do keys[#keys + 1] = b end
   table.sort(keys)
   local parts = {}
   for _, b in ipairs(keys) do
      parts[#parts + 1] = string.format("[%.6g,%d]", common.bucket_upper_ms(b), hist[b])
   end
   return table.concat(parts, ",")
end

local function flush()
   if cur.second ~= nil and cur.n > 0 then
      io.write(string.format(
         '{"kind":"ol_interval","thread":%d,"second":%d,"n":%d,"sum_ms":%.6f,"wait_sum_ms":%.6f,' ..
         '"max_ms":%.6f,"hist":[%s]}\n', sysbench.tid, cur.second, cur.n, cur.sum_ms,
         cur.wait_sum_ms, cur.max_ms, hist_json(cur.hist)))
      io.flush()
   end
   cur.n, cur.sum_ms, cur.wait_sum_ms, cur.max_ms, cur.hist = 0, 0, 0, 0, {}
end

local function record(scheduled, started, ended)
   local sec = math.ceil(ended - T0)
   if sec ~= cur.second then
      flush()
      cur.second = sec
   end
   local ms = (ended - scheduled) * 1000
   cur.n = cur.n + 1
   cur.sum_ms = cur.sum_ms + ms
   cur.wait_sum_ms = cur.wait_sum_ms + math.max(0, started - scheduled) * 1000
   if ms > cur.max_ms then cur.max_ms = ms end
   local b = common.bucket(ms)
   cur.hist[b] = (cur.hist[b] or 0) + 1
end

-- ---------------------------------------------------------------- sysbench hooks

function M.install()
   -- replace sysbench's closed loop (internal sysbench.lua's thread_run) by the schedule;
   -- sysbench's own event timer still runs around each transaction (its service time)
   local user_init, user_done = init, thread_done
   init = function()
      M.create()
      if user_init then user_init() end
   end
   thread_done = function(thread_id)
      flush()
      if user_done then user_done(thread_id) end
   end
   thread_run = function(thread_id)
      -- sleeps end on time: the kernel's default 50 µs timer slack would add to every
      -- latency (PR_SET_TIMERSLACK = 29, in ns, this thread only)
      ffi.C.prctl(29, 1, 0, 0, 0)
      while ffi.C.sb_more_events(thread_id) and common.now() < STOP_AT do
         local scheduled = take()
         if scheduled == nil then
            sleep_until(STOP_AT)
            break
         end
         if scheduled > common.now() then sleep_until(scheduled) end
         local started = common.now()
         ffi.C.sb_event_start(thread_id)
         local success, ret
         repeat
            success, ret = pcall(event, thread_id)
            if not success then
               if type(ret) == "table" and ret.errcode == sysbench.error.RESTART_EVENT then
                  if sysbench.hooks.before_restart_event then
                     sysbench.hooks.before_restart_event(ret)
                  end
               else
                  error(ret, 2)
               end
            end
         until success
         if ret then break end
         ffi.C.sb_event_stop(thread_id)
         record(scheduled, started, common.now())
      end
   end
end

function M.queue_line(stat)
   local q = M.snapshot()
   return string.format('{"kind":"ol_queue","time":%.3f,"due":%d,"started":%d,"queued":%d,' ..
                        '"lag_ms":%.3f,"dropped":%d}\n', stat.time_total, q.due, q.started,
                        q.queued, q.lag_ms, q.dropped)
end

function M.end_line()
   local q = M.snapshot(math.min(common.now(), STOP_AT))
   local hist = {}
   for _, ms in ipairs(q.waits) do
      local b = common.bucket(ms)
      hist[b] = (hist[b] or 0) + 1
   end
   return string.format('{"kind":"ol_end","due":%d,"started":%d,"unstarted":%d,"dropped":%d,' ..
                        '"window_s":%.6f,"unstarted_hist":[%s]}\n', q.due, q.started, q.queued,
                        q.dropped, q.window, hist_json(hist))
end

return M
