-- wrk script: POST one signed GitHub `workflow_job` delivery per request,
-- each with a unique X-GitHub-Delivery (so every request stores a new event),
-- paced to a fixed per-connection rate (wrk's delay()).
--   BODY_FILE  the JSON body (signed once: the signature covers the body only)
--   SIGNATURE  sha256=<hex HMAC-SHA256(body, GITHUB_WEBHOOK_SECRET)>
--   DELAY_MS   pause between a connection's requests (rate ≈ connections·1000/(DELAY_MS+latency))
local body = io.open(os.getenv("BODY_FILE")):read("*a")
local signature = os.getenv("SIGNATURE")
local delay_ms = tonumber(os.getenv("DELAY_MS") or "0")
local counter = 0
local thread_id = 0
local threads = {}

function setup(thread)
  thread_id = thread_id + 1
  thread:set("tid", thread_id)
  table.insert(threads, thread)
end

function request()
  counter = counter + 1
  local headers = {
    ["Content-Type"] = "application/json",
    ["User-Agent"] = "GitHub-Hookshot/bench",
    ["X-GitHub-Event"] = "workflow_job",
    ["X-GitHub-Delivery"] = string.format("bench-%d-%d-%d", os.time(), tid, counter),
    ["X-Hub-Signature-256"] = signature,
  }
  return wrk.format("POST", "/webhooks/github", headers, body)
end

function delay()
  return delay_ms
end
