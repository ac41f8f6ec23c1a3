-- dbstudies TPC-C-like workload for sysbench 1.0, written by us from the TPC-C standard
-- (revision 5.11: clause 1 schema, 2 transaction profiles, 4.3.3 initial population,
-- 5.2.3 mix). It is NOT a TPC-C result and not audited: no terminals, no keying or think
-- times (like every sysbench-based TPC-C), each transaction picks its home warehouse at
-- random, and items of a New-Order are processed in (supply warehouse, item) order to
-- keep deadlocks rare. Fewer round trips than one statement per step of the profiles (the
-- client's cost is its round trips): sessions run with autocommit off (no BEGIN), an item's
-- price and its stock's district info come in one read and the stock is updated in one
-- statement, and a New-Order's lines are inserted in one statement. Deadlocks and lock-wait timeouts restart the transaction (sysbench's
-- --mysql-ignore-errors); each restart is counted per type (dbs_common), never dropped.
--
--   sysbench <wrapper> --warehouses=N prepare   (threads load warehouses in parallel)
--   sysbench <wrapper> --warehouses=N run       (the mix: 45/43/4/4/4)
--   sysbench <wrapper> selftest                 (samples of the key generators, as JSON)
local dbs = require("dbs_common")

sysbench.cmdline.options = {
   warehouses = {"Number of warehouses (the scale)", 1},
}

local DISTRICTS, CUSTOMERS, ORDERS, ITEMS, STOCK = 10, 3000, 3000, 100000, 100000
local FIRST_NEW_ORDER = 2101          -- orders 2101..3000 of a district are undelivered
local UNUSED_ITEM = ITEMS + 1         -- 2.4.1.5: the rolled-back New-Order's unused item
local TYPES = {"new_order", "payment", "order_status", "delivery", "stock_level"}
local SYLLABLES = {"BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING"}
local rand = sysbench.rand.uniform

local SCHEMA = {
   {"warehouse", [[w_id SMALLINT NOT NULL, w_name VARCHAR(10), w_street_1 VARCHAR(20),
      w_street_2 VARCHAR(20), w_city VARCHAR(20), w_state CHAR(2), w_zip CHAR(9),
      w_tax DECIMAL(4,4), w_ytd DECIMAL(12,2), PRIMARY KEY (w_id)]]},
   {"district", [[d_id TINYINT NOT NULL, d_w_id SMALLINT NOT NULL, d_name VARCHAR(10),
      d_street_1 VARCHAR(20), d_street_2 VARCHAR(20), d_city VARCHAR(20), d_state CHAR(2),
      d_zip CHAR(9), d_tax DECIMAL(4,4), d_ytd DECIMAL(12,2), d_next_o_id INT,
      PRIMARY KEY (d_w_id, d_id)]]},
   {"customer", [[c_id INT NOT NULL, c_d_id TINYINT NOT NULL, c_w_id SMALLINT NOT NULL,
      c_first VARCHAR(16), c_middle CHAR(2), c_last VARCHAR(16), c_street_1 VARCHAR(20),
      c_street_2 VARCHAR(20), c_city VARCHAR(20), c_state CHAR(2), c_zip CHAR(9),
      c_phone CHAR(16), c_since DATETIME, c_credit CHAR(2), c_credit_lim DECIMAL(12,2),
      c_discount DECIMAL(4,4), c_balance DECIMAL(12,2), c_ytd_payment DECIMAL(12,2),
      c_payment_cnt SMALLINT, c_delivery_cnt SMALLINT, c_data VARCHAR(500),
      PRIMARY KEY (c_w_id, c_d_id, c_id), KEY idx_customer_name (c_w_id, c_d_id, c_last, c_first)]]},
   {"history", [[h_c_id INT, h_c_d_id TINYINT, h_c_w_id SMALLINT, h_d_id TINYINT,
      h_w_id SMALLINT, h_date DATETIME, h_amount DECIMAL(6,2), h_data VARCHAR(24)]]},
   {"new_orders", [[no_o_id INT NOT NULL, no_d_id TINYINT NOT NULL, no_w_id SMALLINT NOT NULL,
      PRIMARY KEY (no_w_id, no_d_id, no_o_id)]]},
   {"orders", [[o_id INT NOT NULL, o_d_id TINYINT NOT NULL, o_w_id SMALLINT NOT NULL,
      o_c_id INT, o_entry_d DATETIME, o_carrier_id TINYINT, o_ol_cnt TINYINT,
      o_all_local TINYINT, PRIMARY KEY (o_w_id, o_d_id, o_id),
      KEY idx_orders_customer (o_w_id, o_d_id, o_c_id, o_id)]]},
   {"order_line", [[ol_o_id INT NOT NULL, ol_d_id TINYINT NOT NULL, ol_w_id SMALLINT NOT NULL,
      ol_number TINYINT NOT NULL, ol_i_id INT, ol_supply_w_id SMALLINT, ol_delivery_d DATETIME,
      ol_quantity TINYINT, ol_amount DECIMAL(6,2), ol_dist_info CHAR(24),
      PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number)]]},
   {"item", [[i_id INT NOT NULL, i_im_id INT, i_name VARCHAR(24), i_price DECIMAL(5,2),
      i_data VARCHAR(50), PRIMARY KEY (i_id)]]},
   {"stock", [[s_i_id INT NOT NULL, s_w_id SMALLINT NOT NULL, s_quantity SMALLINT,
      s_dist_01 CHAR(24), s_dist_02 CHAR(24), s_dist_03 CHAR(24), s_dist_04 CHAR(24),
      s_dist_05 CHAR(24), s_dist_06 CHAR(24), s_dist_07 CHAR(24), s_dist_08 CHAR(24),
      s_dist_09 CHAR(24), s_dist_10 CHAR(24), s_ytd DECIMAL(8,0), s_order_cnt SMALLINT,
      s_remote_cnt SMALLINT, s_data VARCHAR(50), PRIMARY KEY (s_w_id, s_i_id)]]},
   -- the NURand constant of C_LAST used at load time (2.1.6.1: the run's must differ by 65..119)
   {"tpcc_constants", [[name VARCHAR(16) NOT NULL, value INT NOT NULL, PRIMARY KEY (name)]]},
}

-- ---------------------------------------------------------------- generators

function last_name(n)
   -- 4.3.2.3: three syllables from the digits of n (0..999)
   return SYLLABLES[math.floor(n / 100) + 1] .. SYLLABLES[math.floor(n / 10) % 10 + 1] ..
      SYLLABLES[n % 10 + 1]
end

function run_c_last(c_load)
   -- a C for C_LAST at run time: |C_run - C_load| in 65..119, not 96 or 112 (2.1.6.1)
   while true do
      local c = rand(0, 255)
      local d = math.abs(c - c_load)
      if d >= 65 and d <= 119 and d ~= 96 and d ~= 112 then
         return c
      end
   end
end

local function with_original(s)
   -- 4.3.3.1: 10 % of i_data / s_data hold "ORIGINAL" at a random position
   if rand(1, 10) == 1 then
      local at = rand(1, #s - 7)
      return s:sub(1, at - 1) .. "ORIGINAL" .. s:sub(at + 8)
   end
   return s
end

local function zip()
   return dbs.digits(4) .. "11111"
end

local function address()
   return string.format("'%s','%s','%s','%s','%s'", dbs.letters(10, 20), dbs.letters(10, 20),
                        dbs.letters(10, 20), sysbench.rand.string("@@"), zip())
end

-- ---------------------------------------------------------------- prepare

local function bulk(con, head, rows_fn, n)
   con:bulk_insert_init(head)
   for i = 1, n do
      con:bulk_insert_next(rows_fn(i))
   end
   con:bulk_insert_done()
end

local function load_items(con)
   bulk(con, "INSERT INTO item (i_id, i_im_id, i_name, i_price, i_data) VALUES", function(i)
      return string.format("(%d,%d,'%s',%.2f,'%s')", i, rand(1, 10000), dbs.letters(14, 24),
                           dbs.decimal(1, 100, 2), with_original(dbs.letters(26, 50)))
   end, ITEMS)
end

local function load_warehouse(con, w, c_load)
   con:query(string.format("INSERT INTO warehouse VALUES (%d,'%s',%s,%.4f,300000.00)",
                           w, dbs.letters(6, 10), address(), dbs.decimal(0, 0.2, 4)))
   bulk(con, "INSERT INTO stock VALUES", function(i)
      local dists = {}
      for d = 1, 10 do dists[d] = "'" .. dbs.letters(24, 24) .. "'" end
      return string.format("(%d,%d,%d,%s,0,0,0,'%s')", i, w, rand(10, 100),
                           table.concat(dists, ","), with_original(dbs.letters(26, 50)))
   end, STOCK)
   for d = 1, DISTRICTS do
      con:query(string.format("INSERT INTO district VALUES (%d,%d,'%s',%s,%.4f,30000.00,%d)",
                              d, w, dbs.letters(6, 10), address(), dbs.decimal(0, 0.2, 4), ORDERS + 1))
      bulk(con, "INSERT INTO customer VALUES", function(c)
         local name = c <= 1000 and last_name(c - 1) or last_name(dbs.nurand(255, c_load, 0, 999))
         return string.format(
            "(%d,%d,%d,'%s','OE','%s',%s,'%s',NOW(),'%s',50000.00,%.4f,-10.00,10.00,1,0,'%s')",
            c, d, w, dbs.letters(8, 16), name, address(), dbs.digits(16),
            rand(1, 10) == 1 and "BC" or "GC", dbs.decimal(0, 0.5, 4), dbs.letters(300, 500))
      end, CUSTOMERS)
      bulk(con, "INSERT INTO history VALUES", function(c)
         return string.format("(%d,%d,%d,%d,%d,NOW(),10.00,'%s')", c, d, w, d, w, dbs.letters(12, 24))
      end, CUSTOMERS)
      -- orders: customers in a random permutation (4.3.3.1), the last 900 undelivered
      local perm = {}
      for i = 1, CUSTOMERS do perm[i] = i end
      for i = CUSTOMERS, 2, -1 do
         local j = rand(1, i)
         perm[i], perm[j] = perm[j], perm[i]
      end
      local lines = {}
      bulk(con, "INSERT INTO orders VALUES", function(o)
         lines[o] = rand(5, 15)
         local carrier = o < FIRST_NEW_ORDER and tostring(rand(1, 10)) or "NULL"
         return string.format("(%d,%d,%d,%d,NOW(),%s,%d,1)", o, d, w, perm[o], carrier, lines[o])
      end, ORDERS)
      con:bulk_insert_init("INSERT INTO order_line VALUES")
      for o = 1, ORDERS do
         local delivered = o < FIRST_NEW_ORDER
         for n = 1, lines[o] do
            con:bulk_insert_next(string.format("(%d,%d,%d,%d,%d,%d,%s,5,%.2f,'%s')", o, d, w, n,
               rand(1, ITEMS), w, delivered and "NOW()" or "NULL",
               delivered and 0 or dbs.decimal(0.01, 9999.99, 2), dbs.letters(24, 24)))
         end
      end
      con:bulk_insert_done()
      bulk(con, "INSERT INTO new_orders VALUES", function(i)
         return string.format("(%d,%d,%d)", FIRST_NEW_ORDER + i - 1, d, w)
      end, ORDERS - FIRST_NEW_ORDER + 1)
   end
end

function cmd_prepare()
   local drv = sysbench.sql.driver()
   local con = drv:connect()
   dbs.create_tables(con, SCHEMA)
   local threads = sysbench.opt.threads
   if sysbench.tid == 0 then
      con:query(string.format("INSERT INTO tpcc_constants VALUES ('c_last', %d)", rand(0, 255)))
      load_items(con)
   end
   local c_load
   while c_load == nil do  -- thread 0 writes it first; the others wait for it
      c_load = con:query_row("SELECT value FROM tpcc_constants WHERE name = 'c_last'")
      if c_load == nil then os.execute("sleep 0.1") end
   end
   for w = sysbench.tid + 1, sysbench.opt.warehouses, threads do
      load_warehouse(con, w, tonumber(c_load))
   end
end

function cmd_selftest()
   -- samples of the generators for the driver's unit tests: one JSON line
   local c_load = 117
   local c_run = {}
   for i = 1, 200 do c_run[i] = run_c_last(c_load) end
   local cust, item, names = {}, {}, {}
   for i = 1, 20000 do
      cust[i] = dbs.nurand(1023, 259, 1, CUSTOMERS)
      item[i] = dbs.nurand(8191, 7911, 1, ITEMS)
      names[i] = dbs.nurand(255, c_load, 0, 999)
   end
   io.write(string.format('{"kind":"selftest","c_load":%d,"c_run":[%s],"customer_ids":[%s],' ..
                          '"item_ids":[%s],"name_numbers":[%s],"last_names":["%s","%s","%s"]}\n',
                          c_load, table.concat(c_run, ","), table.concat(cust, ","),
                          table.concat(item, ","), table.concat(names, ","),
                          last_name(0), last_name(371), last_name(999)))
end

sysbench.cmdline.commands = {
   prepare = {cmd_prepare, sysbench.cmdline.PARALLEL_COMMAND},
   cleanup = {dbs.cleanup_command(SCHEMA)},
   selftest = {cmd_selftest},
}

-- ---------------------------------------------------------------- run

local con, W, C_CUSTOMER, C_ITEM, C_LAST

function thread_init()
   con = sysbench.sql.driver():connect()
   con:query("SET autocommit = 0")  -- every transaction ends in COMMIT or ROLLBACK
   W = sysbench.opt.warehouses
   local c_load = con:query_row("SELECT value FROM tpcc_constants WHERE name = 'c_last'")
   assert(c_load ~= nil, "tpcc: no tpcc_constants row: run prepare first")
   C_LAST = run_c_last(tonumber(c_load))
   C_CUSTOMER, C_ITEM = rand(0, 1023), rand(0, 8191)
   dbs.types(TYPES)
end

dbs.thread_hooks(function() return con end)

local function other_warehouse(w)
   -- a remote warehouse, uniformly among the others (2.4.1.5, 2.5.1.2)
   local r = rand(1, W - 1)
   return r >= w and r + 1 or r
end

local function customer_by_name(w, d, last)
   -- 2.5.2.2: the customer at position ceil(n / 2) of those with this last name, by c_first
   local rs = con:query(string.format("SELECT c_id FROM customer WHERE c_w_id=%d AND c_d_id=%d " ..
                                      "AND c_last='%s' ORDER BY c_first", w, d, last))
   local ids = {}
   for i = 1, rs.nrows do ids[i] = rs:fetch_row()[1] end
   if #ids == 0 then return nil end
   return tonumber(ids[math.ceil(#ids / 2)])
end

local function new_order()
   local w, d = rand(1, W), rand(1, DISTRICTS)
   local c = dbs.nurand(1023, C_CUSTOMER, 1, CUSTOMERS)
   local n = rand(5, 15)
   local rollback = rand(1, 100) == 1
   local items, all_local = {}, 1
   for i = 1, n do
      local supply = w
      if W > 1 and rand(1, 100) == 1 then
         supply = other_warehouse(w)
         all_local = 0
      end
      items[i] = {id = dbs.nurand(8191, C_ITEM, 1, ITEMS), supply = supply, quantity = rand(1, 10)}
   end
   if rollback then items[n].id = UNUSED_ITEM end
   table.sort(items, function(a, b)
      return a.supply < b.supply or (a.supply == b.supply and a.id < b.id)
   end)
   con:query_row(string.format("SELECT c_discount, c_last, c_credit, w_tax FROM customer, warehouse " ..
                               "WHERE w_id=%d AND c_w_id=w_id AND c_d_id=%d AND c_id=%d", w, d, c))
   local o_id = tonumber((con:query_row(string.format(
      "SELECT d_next_o_id, d_tax FROM district WHERE d_w_id=%d AND d_id=%d FOR UPDATE", w, d))))
   con:query(string.format("UPDATE district SET d_next_o_id=d_next_o_id+1 WHERE d_w_id=%d AND d_id=%d", w, d))
   con:query(string.format("INSERT INTO orders VALUES (%d,%d,%d,%d,NOW(),NULL,%d,%d)",
                           o_id, d, w, c, n, all_local))
   con:query(string.format("INSERT INTO new_orders VALUES (%d,%d,%d)", o_id, d, w))
   local lines = {}  -- inserted in one statement after the items (fewer round trips)
   for i, it in ipairs(items) do
      local price, _, _, dist = con:query_row(string.format(
         "SELECT i_price, i_name, i_data, s_dist_%02d, s_data FROM item JOIN stock ON s_i_id = i_id " ..
         "WHERE i_id=%d AND s_w_id=%d", d, it.id, it.supply))
      if price == nil then  -- the unused item: the whole transaction rolls back (2.4.2.3)
         con:query("ROLLBACK")
         return true
      end
      -- 2.4.2.2: S_QUANTITY - OL_QUANTITY if that leaves ≥ 10, else + 91; under the row lock
      con:query(string.format("UPDATE stock SET s_quantity=IF(s_quantity >= %d, s_quantity - %d, s_quantity + %d), " ..
                              "s_ytd=s_ytd+%d, s_order_cnt=s_order_cnt+1, s_remote_cnt=s_remote_cnt+%d " ..
                              "WHERE s_i_id=%d AND s_w_id=%d", it.quantity + 10, it.quantity,
                              91 - it.quantity, it.quantity, it.supply == w and 0 or 1, it.id, it.supply))
      lines[i] = string.format("(%d,%d,%d,%d,%d,%d,NULL,%d,%.2f,'%s')", o_id, d, w, i, it.id,
                               it.supply, it.quantity, it.quantity * tonumber(price), dist)
   end
   con:query("INSERT INTO order_line VALUES " .. table.concat(lines, ","))
   con:query("COMMIT")
   return false
end

local function payment()
   local w, d = rand(1, W), rand(1, DISTRICTS)
   local c_w, c_d = w, d
   if W > 1 and rand(1, 100) <= 15 then  -- 2.5.1.2: 15 % through a remote warehouse
      c_w, c_d = other_warehouse(w), rand(1, DISTRICTS)
   end
   local amount = rand(100, 500000) / 100
   local by_name = rand(1, 100) <= 60
   local last = by_name and last_name(dbs.nurand(255, C_LAST, 0, 999)) or nil
   con:query(string.format("UPDATE warehouse SET w_ytd=w_ytd+%.2f WHERE w_id=%d", amount, w))
   local w_name = con:query_row(string.format(
      "SELECT w_name, w_street_1, w_street_2, w_city, w_state, w_zip FROM warehouse WHERE w_id=%d", w))
   con:query(string.format("UPDATE district SET d_ytd=d_ytd+%.2f WHERE d_w_id=%d AND d_id=%d", amount, w, d))
   local d_name = con:query_row(string.format(
      "SELECT d_name, d_street_1, d_street_2, d_city, d_state, d_zip FROM district WHERE d_w_id=%d AND d_id=%d", w, d))
   local c = by_name and customer_by_name(c_w, c_d, last) or dbs.nurand(1023, C_CUSTOMER, 1, CUSTOMERS)
   local credit, data = con:query_row(string.format(
      "SELECT c_credit, c_data, c_first, c_middle, c_last, c_balance FROM customer " ..
      "WHERE c_w_id=%d AND c_d_id=%d AND c_id=%d FOR UPDATE", c_w, c_d, c))
   local set_data = ""
   if credit == "BC" then  -- 2.5.2.2: the payment's facts in front of c_data, 500 chars kept
      local head = string.format("%d %d %d %d %d %.2f|", c, c_d, c_w, d, w, amount)
      set_data = ", c_data=" .. dbs.sql_string((head .. (data or "")):sub(1, 500))
   end
   con:query(string.format("UPDATE customer SET c_balance=c_balance-%.2f, c_ytd_payment=c_ytd_payment+%.2f, " ..
                           "c_payment_cnt=c_payment_cnt+1%s WHERE c_w_id=%d AND c_d_id=%d AND c_id=%d",
                           amount, amount, set_data, c_w, c_d, c))
   con:query(string.format("INSERT INTO history VALUES (%d,%d,%d,%d,%d,NOW(),%.2f,%s)", c, c_d, c_w,
                           d, w, amount, dbs.sql_string((w_name .. "    " .. d_name):sub(1, 24))))
   con:query("COMMIT")
   return false
end

local function order_status()
   local w, d = rand(1, W), rand(1, DISTRICTS)
   local c
   if rand(1, 100) <= 60 then
      c = customer_by_name(w, d, last_name(dbs.nurand(255, C_LAST, 0, 999)))
   else
      c = dbs.nurand(1023, C_CUSTOMER, 1, CUSTOMERS)
   end
   con:query_row(string.format("SELECT c_balance, c_first, c_middle, c_last FROM customer " ..
                               "WHERE c_w_id=%d AND c_d_id=%d AND c_id=%d", w, d, c))
   local o_id = con:query_row(string.format("SELECT o_id, o_carrier_id, o_entry_d FROM orders " ..
      "WHERE o_w_id=%d AND o_d_id=%d AND o_c_id=%d ORDER BY o_id DESC LIMIT 1", w, d, c))
   if o_id ~= nil then
      con:query(string.format("SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d " ..
                              "FROM order_line WHERE ol_w_id=%d AND ol_d_id=%d AND ol_o_id=%d", w, d, o_id))
   end
   con:query("COMMIT")
   return false
end

local function delivery()
   local w, carrier = rand(1, W), rand(1, 10)
   for d = 1, DISTRICTS do
      local o_id = con:query_row(string.format("SELECT no_o_id FROM new_orders WHERE no_w_id=%d " ..
         "AND no_d_id=%d ORDER BY no_o_id LIMIT 1 FOR UPDATE", w, d))
      if o_id ~= nil then  -- 2.7.4.2: a district without undelivered orders is skipped
         con:query(string.format("DELETE FROM new_orders WHERE no_w_id=%d AND no_d_id=%d AND no_o_id=%s", w, d, o_id))
         local c = con:query_row(string.format("SELECT o_c_id FROM orders WHERE o_w_id=%d AND o_d_id=%d " ..
                                               "AND o_id=%s", w, d, o_id))
         con:query(string.format("UPDATE orders SET o_carrier_id=%d WHERE o_w_id=%d AND o_d_id=%d AND o_id=%s",
                                 carrier, w, d, o_id))
         con:query(string.format("UPDATE order_line SET ol_delivery_d=NOW() WHERE ol_w_id=%d AND ol_d_id=%d " ..
                                 "AND ol_o_id=%s", w, d, o_id))
         local total = con:query_row(string.format("SELECT SUM(ol_amount) FROM order_line WHERE ol_w_id=%d " ..
                                                   "AND ol_d_id=%d AND ol_o_id=%s", w, d, o_id))
         con:query(string.format("UPDATE customer SET c_balance=c_balance+%s, c_delivery_cnt=c_delivery_cnt+1 " ..
                                 "WHERE c_w_id=%d AND c_d_id=%d AND c_id=%s", total or "0", w, d, c))
      end
   end
   con:query("COMMIT")
   return false
end

local function stock_level()
   local w, d, threshold = rand(1, W), rand(1, DISTRICTS), rand(10, 20)
   local next_o = tonumber((con:query_row(string.format(
      "SELECT d_next_o_id FROM district WHERE d_w_id=%d AND d_id=%d", w, d))))
   con:query_row(string.format("SELECT COUNT(DISTINCT s_i_id) FROM order_line, stock WHERE ol_w_id=%d " ..
      "AND ol_d_id=%d AND ol_o_id < %d AND ol_o_id >= %d AND s_w_id=%d AND s_i_id=ol_i_id AND s_quantity < %d",
      w, d, next_o, next_o - 20, w, threshold))
   con:query("COMMIT")
   return false
end

local RUN = {new_order = new_order, payment = payment, order_status = order_status,
             delivery = delivery, stock_level = stock_level}
local pending  -- the type of a restarted event: a retry runs the same transaction type

function event()
   local kind = pending
   if kind == nil then
      local r = rand(1, 100)  -- 5.2.3: 45 / 43 / 4 / 4 / 4
      kind = r <= 45 and "new_order" or r <= 88 and "payment" or r <= 92 and "order_status"
         or r <= 96 and "delivery" or "stock_level"
   end
   pending = kind
   dbs.begin(kind)
   local rolled_back = RUN[kind]()
   pending = nil
   dbs.finish(rolled_back)
end
