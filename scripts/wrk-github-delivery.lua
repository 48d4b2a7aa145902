-- wrk script: POST one signed GitHub `workflow_job` delivery per request,
-- each a different job (its own job id, body and signature) with a unique
-- X-GitHub-Delivery, so every request stores a new event: the producer
-- deduplicates by the delivery id and by what the signature covers (the
-- repository, job id and attempt), so resending one signed body would
-- measure only the duplicate path. Paced to a fixed per-connection rate
-- (wrk's delay()).
--   BODIES_FILE  one compact JSON body per line
--   SIGS_FILE    the matching `sha256=<hex HMAC-SHA256(body, secret)>`, one per line
--   DELAY_MS     pause between a connection's requests (rate ≈ connections·1000/(DELAY_MS+latency))
local function lines(path)
  local out = {}
  for l in io.lines(path) do
    out[#out + 1] = l
  end
  return out
end
local bodies = lines(os.getenv("BODIES_FILE"))
local sigs = lines(os.getenv("SIGS_FILE"))
local delay_ms = tonumber(os.getenv("DELAY_MS") or "0")
local counter = 0
local thread_id = 0

function setup(thread)
  thread_id = thread_id + 1
  thread:set("tid", thread_id)
end

function request()
  counter = counter + 1
  -- Each wrk thread has its own Lua state: threads take interleaved bodies.
  local i = ((counter - 1) * 2 + (tid - 1)) % #bodies + 1
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
