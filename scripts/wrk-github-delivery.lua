-- wrk script: POST one signed GitHub `workflow_job` delivery per request,
-- each a different job (its own job id, body and signature) with a unique
-- X-GitHub-Delivery, so every request stores a new event: the producer
-- deduplicates by the delivery id and by what the signature covers (the
-- repository, job id and attempt), so resending one signed body would
-- measure only the duplicate path. Paced to a fixed per-connection rate
-- (wrk's delay()).
--   BODIES_FILE  one compact JSON body per line
--   SIGS_FILE    the matching `sha256=<hex HMAC-SHA256(body, secret)>`, one per line
--   THREADS      wrk's -t: thread k sends lines k, k + THREADS, … (no two alike)
--   DELAY_MS     pause between a connection's requests (rate ≈ connections·1000/(DELAY_MS+latency))
local threads = tonumber(os.getenv("THREADS") or "1")
local delay_ms = tonumber(os.getenv("DELAY_MS") or "0")
local bodies, sigs = {}, {}
local counter = 0
local thread_id = 0

function setup(thread)
  thread_id = thread_id + 1
  thread:set("tid", thread_id)
end

-- This thread's share of the lines, read in its own Lua state (not in the
-- main one, which sends nothing).
local function share(path)
  local out, n = {}, 0
  for l in io.lines(path) do
    if n % threads == tid - 1 then
      out[#out + 1] = l
    end
    n = n + 1
  end
  return out
end

function init(args)
  bodies = share(os.getenv("BODIES_FILE"))
  sigs = share(os.getenv("SIGS_FILE"))
end

function request()
  counter = counter + 1
  local i = (counter - 1) % #bodies + 1
  local headers = {
    ["Content-Type"] = "application/json",
    ["User-Agent"] = "GitHub-Hookshot/bench",
    ["X-GitHub-Event"] = "workflow_job",
    ["X-GitHub-Delivery"] = string.format("bench-%d-%d-%d", os.time(), tid, counter),
    ["X-Hub-Signature-256"] = sigs[i],
  }
  return wrk.format("POST", "/webhooks/github", headers, bodies[i])
end

function delay()
  return delay_ms
end
