-- send.lua -- the wrk script for every row of bench/run.sh.
--
--   wrk ... -s bench/send.lua URL -- MODE WAIT PREFIX [CTX/EVERY]
--
-- MODE   new     each request a fresh client-minted task: taskId and
--                messageId "<PREFIX>-<thread>-<n>" (never repeated: PREFIX is
--                unique per wrk run, <thread> per thread, n counts up), with
--                A2A-Extensions: urn:once:a2a:idempotency:v1 (onced)
--        uuid    as "new", but each taskId begins with 16 random hex digits
--                ("<hex16>-<PREFIX>-<thread>-<n>"): the order of IDs a client
--                that mints UUIDs sends, where "new"'s two counting
--                sequences insert into a B-tree at two places only
--        ask     as "new", with the text "ask:more?": the echo executor
--                answers TASK_STATE_INPUT_REQUIRED (bench/scale.sh's tasks
--                that stay open, for ListTasks' state filter)
--        fresh   each request a fresh messageId and no taskId: the server
--                mints the task (the @a2a-js/sdk peer, which has no
--                client-minted IDs)
--        replay  the same message every time: taskId/messageId "<PREFIX>";
--                run.sh sends it once before, so every request is a replay
--        hello   the "new" body to a server that ignores it (the ceiling)
--        putitem not A2A: DynamoDB PutItem calls to dynalite, each a new key
--                with a 400-byte payload and attribute_not_exists
--                (registration's own write), into table PREFIX: the
--                DynamoDB row's ceiling in bench/backends.sh. dynalite wants
--                an Authorization header of SigV4's shape but checks no
--                signature, so a fixed one does
-- WAIT   ri      configuration.returnImmediately = true
--        block   no configuration: SendMessage blocks until the task is done
-- CTX/EVERY  "new" and "ask" only, optional: every EVERY-th request carries
--        message.contextId CTX (a conversation shared by many tasks, for
--        ListTasks' context filter); without it no request names a context
--
-- Every request is a full JSON-RPC SendMessage with Content-Type and
-- A2A-Version: 1.0, so client-side work is the same in every row. Besides
-- wrk's own socket errors and non-2xx count, response() checks each answer:
--   rpc_err      a JSON-RPC error object (HTTP 200 or not)
--   not_done     "block" mode, and the task in the answer is not completed
--                (for "ask": not TASK_STATE_INPUT_REQUIRED)
--   not_replayed "replay" mode, and Idempotent-Replayed: true is missing
-- done() prints one machine-readable RESULT line that run.sh parses; its
-- ok= counts the 2xx answers that passed those checks (bench/gateway.sh
-- counts only these as throughput).

local threads = {}
local counter = 0

function setup(thread)
   thread:set("tindex", #threads)
   table.insert(threads, thread)
end

function init(args)
   mode = args[1] or "new"
   wait = args[2] or "block"
   prefix = args[3] or "b"
   tag = prefix .. "-" .. tostring(tindex)
   -- wrk's threads start from one random seed: give each its own
   math.randomseed(os.time() * 1000 + tindex)
   uuid = mode == "uuid"
   if uuid then mode = "new" end
   ctx, every = nil, 0
   if args[4] and (mode == "new" or mode == "ask") then
      ctx, every = string.match(args[4], "^(.+)/(%d+)$")
      every = tonumber(every or 0)
   end
   text = mode == "ask" and "ask:more?" or "hello"
   want = mode == "ask" and "TASK_STATE_INPUT_REQUIRED" or "TASK_STATE_COMPLETED"
   rpc_err, not_done, not_replayed, checked, ok = 0, 0, 0, 0, 0
   sample = ""
   wrk.method = "POST"
   wrk.headers["Content-Type"] = "application/json"
   wrk.headers["A2A-Version"] = "1.0"
   if mode == "new" or mode == "ask" or mode == "replay" then
      wrk.headers["A2A-Extensions"] = "urn:once:a2a:idempotency:v1"
   end
   if mode == "putitem" then
      wrk.headers["Content-Type"] = "application/x-amz-json-1.0"
      wrk.headers["A2A-Version"] = nil
      wrk.headers["X-Amz-Target"] = "DynamoDB_20120810.PutItem"
      wrk.headers["X-Amz-Date"] = "20260101T000000Z"
      wrk.headers["Authorization"] = "AWS4-HMAC-SHA256 Credential=bench/20260101/us-east-1/" ..
         "dynamodb/aws4_request, SignedHeaders=host;x-amz-date, Signature=0"
      pad = string.rep("x", 400)
   end
   conf = ""
   if wait == "ri" then
      conf = ',"configuration":{"returnImmediately":true}'
   end
end

local function body_for(n)
   if mode == "putitem" then
      return '{"TableName":"' .. prefix .. '","Item":{"pk":{"S":"' .. tag .. "-" .. n ..
         '"},"sk":{"S":"r"},"tj":{"S":"' .. pad .. '"}},' ..
         '"ConditionExpression":"attribute_not_exists(pk)"}'
   end
   if mode == "replay" then
      return '{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{' ..
         '"messageId":"' .. prefix .. '","taskId":"' .. prefix .. '",' ..
         '"role":"ROLE_USER","parts":[{"text":"hello"}]}' .. conf .. '}}'
   end
   local id = tag .. "-" .. n
   if uuid then
      id = string.format("%08x%08x", math.random(0, 0x7fffffff), math.random(0, 0x7fffffff)) ..
         "-" .. id
   end
   local task = ""
   if mode ~= "fresh" then
      task = '"taskId":"' .. id .. '",'
   end
   if ctx and every > 0 and n % every == 0 then
      task = task .. '"contextId":"' .. ctx .. '",'
   end
   return '{"jsonrpc":"2.0","id":' .. n .. ',"method":"SendMessage","params":{"message":{' ..
      '"messageId":"' .. id .. '",' .. task ..
      '"role":"ROLE_USER","parts":[{"text":"' .. text .. '"}]}' .. conf .. '}}'
end

function request()
   counter = counter + 1
   return wrk.format(nil, "/", nil, body_for(counter))
end

function response(status, headers, body)
   checked = checked + 1
   local bad = false
   if mode ~= "hello" and string.find(body, '"error"', 1, true) then
      rpc_err = rpc_err + 1
      bad = true
   elseif wait == "block" and (mode == "new" or mode == "fresh" or mode == "ask") and
          not string.find(body, want, 1, true) then
      not_done = not_done + 1
      bad = true
   elseif mode == "replay" and headers["Idempotent-Replayed"] ~= "true" and
          headers["idempotent-replayed"] ~= "true" then
      not_replayed = not_replayed + 1
      bad = true
   end
   if not bad and status >= 200 and status < 300 then
      ok = ok + 1
   end
   if (bad or status ~= 200) and sample == "" then
      sample = "HTTP " .. status .. " " .. string.sub(body, 1, 400)
   end
end

function done(summary, latency, requests)
   local e = summary.errors
   local rerr, nd, nr, ck, okn = 0, 0, 0, 0, 0
   local samp = ""
   for _, t in ipairs(threads) do
      rerr = rerr + t:get("rpc_err")
      nd = nd + t:get("not_done")
      nr = nr + t:get("not_replayed")
      ck = ck + t:get("checked")
      okn = okn + t:get("ok")
      if samp == "" then samp = t:get("sample") end
   end
   local secs = summary.duration / 1e6
   io.write(string.format(
      "RESULT requests=%d seconds=%.3f rps=%.0f p50_ms=%.3f p99_ms=%.3f max_ms=%.3f " ..
      "connect=%d read=%d write=%d non2xx=%d timeout=%d rpc_err=%d not_done=%d " ..
      "not_replayed=%d checked=%d ok=%d\n",
      summary.requests, secs, summary.requests / secs,
      latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000,
      e.connect, e.read, e.write, e.status, e.timeout, rerr, nd, nr, ck, okn))
   if samp ~= "" then
      io.write("SAMPLE " .. samp .. "\n")
   end
end
