-- dbstudies: can sysbench run the user's script DBSTUDIES_SCRIPT? Loads it as the report
-- wrapper would (its folder and ours on package.path) and prints one verdict line:
--   DBS_OK | DBS_LOAD_ERROR <message> | DBS_NO_EVENT
local script = os.getenv("DBSTUDIES_SCRIPT")
local dir = script:match("^(.*)/[^/]*$") or "."
package.path = dir .. "/?.lua;" .. (os.getenv("DBSTUDIES_LUA_DIR") or ".") .. "/?.lua;" .. package.path
local ok, err = pcall(dofile, script)
if not ok then
   print("DBS_LOAD_ERROR " .. tostring(err))
   os.exit(3)
end
if type(event) ~= "function" then
   print("DBS_NO_EVENT")
   os.exit(4)
end
print("DBS_OK")
os.exit(0)
