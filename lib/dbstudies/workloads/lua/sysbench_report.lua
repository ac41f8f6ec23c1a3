-- dbstudies wrapper around sysbench 1.0's Lua workloads: its bundled OLTP scripts and ours
-- (tpcc, linkbench: found in DBSTUDIES_LUA_DIR).
-- Loads the workload named by DBSTUDIES_WORKLOAD (e.g. oltp_read_only), or the user's own
-- script at the path DBSTUDIES_SCRIPT (its folder first on package.path), and replaces the
-- human-readable reports by one JSON object per line:
--   {"kind":"interval", ...}  every --report-interval seconds
--   {"kind":"total", ...}     once, at the end of the run
-- Table options (e.g. compression) come from DBSTUDIES_TABLE_OPTIONS (oltp_common's
-- mysql_table_options global).
-- DBSTUDIES_RATE (transactions/s) makes the load open-loop (dbs_openloop.lua): its lines
-- ({"kind":"ol_…"}) follow each interval and total line.
local workload = os.getenv("DBSTUDIES_WORKLOAD")
local script = os.getenv("DBSTUDIES_SCRIPT")
if (workload == nil or workload == "") and (script == nil or script == "") then
   error("neither DBSTUDIES_WORKLOAD nor DBSTUDIES_SCRIPT is set")
end
mysql_table_options = os.getenv("DBSTUDIES_TABLE_OPTIONS")
local ours = os.getenv("DBSTUDIES_LUA_DIR")
if ours ~= nil and ours ~= "" then
   package.path = ours .. "/?.lua;" .. package.path
end
local function load_workload()
   if script ~= nil and script ~= "" then
      package.path = (script:match("^(.*)/[^/]*$") or ".") .. "/?.lua;" .. package.path
      dofile(script)
   else
      require(workload)
   end
end

-- DBSTUDIES_CHECK=1: can sysbench run this workload? It is loaded exactly as a measured run
-- loads it (same command, options and package.path); then the run command is replaced by one
-- that prints a verdict, so sysbench still checks the options against the script's own and
-- stops before any thread or connection starts. One line:
--   DBS_OK [oltp_common] | DBS_LOAD_ERROR <message> | DBS_NO_EVENT | DBS_NO_PREPARE
if os.getenv("DBSTUDIES_CHECK") == "1" then
   local ok, err = pcall(load_workload)
   if not ok then
      print("DBS_LOAD_ERROR " .. tostring(err):gsub("\n", " "))
      os.exit(3)
   end
   if type(event) ~= "function" then
      print("DBS_NO_EVENT")
      os.exit(4)
   end
   local commands = type(sysbench.cmdline.commands) == "table" and sysbench.cmdline.commands or {}
   if type(prepare) ~= "function" and not (type(commands.prepare) == "table" and commands.prepare[1]) then
      print("DBS_NO_PREPARE")
      os.exit(5)
   end
   local built_on = package.loaded["oltp_common"] ~= nil and " oltp_common" or ""
   commands.run = {function() print("DBS_OK" .. built_on) end}
   sysbench.cmdline.commands = commands
   return
end
load_workload()
local openloop = nil
if os.getenv("DBSTUDIES_RATE") ~= nil and os.getenv("DBSTUDIES_RATE") ~= "" then
   openloop = require("dbs_openloop")
   openloop.install()
end

local function report(kind, stat)
   local seconds = stat.time_interval
   io.write(string.format(
      '{"kind":"%s","time":%.3f,"interval":%.6f,"threads":%u,"events":%u,' ..
      '"reads":%u,"writes":%u,"other":%u,"errors":%u,"reconnects":%u,' ..
      '"latency_pct_ms":%.6f,"latency_min_ms":%.6f,"latency_avg_ms":%.6f,' ..
      '"latency_max_ms":%.6f,"tps":%.4f,"qps":%.4f}\n',
      kind, stat.time_total, seconds, stat.threads_running, stat.events,
      stat.reads, stat.writes, stat.other, stat.errors, stat.reconnects,
      stat.latency_pct * 1000, (stat.latency_min or 0) * 1000,
      (stat.latency_avg or 0) * 1000, (stat.latency_max or 0) * 1000,
      stat.events / seconds, (stat.reads + stat.writes + stat.other) / seconds))
   io.flush()
end

sysbench.hooks.report_intermediate = function(stat)
   report("interval", stat)
   if openloop then io.write(openloop.queue_line(stat)); io.flush() end
end
sysbench.hooks.report_cumulative = function(stat)
   report("total", stat)
   if openloop then io.write(openloop.end_line()); io.flush() end
end
