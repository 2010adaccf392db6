-- wrk script of the booking storm (run.sh): every request is POST /v1/rentals for one H100
-- for one day at a random date of STORM_DATES, for a random one of the customers, with an
-- Idempotency-Key no other request uses. Counts 201s, 409s and other answers; done() prints
-- one STORM line for run.sh.
local dates = {}
for d in string.gmatch(os.getenv("STORM_DATES") or "", "[^,]+") do dates[#dates + 1] = d end
-- One API token and SSH key per customer org, in the same order; each request books for one
-- of them at random.
local tokens, keys = {}, {}
for t in string.gmatch(os.getenv("STORM_TOKENS") or "", "[^,]+") do tokens[#tokens + 1] = t end
for k in string.gmatch(os.getenv("STORM_KEYS") or "", "[^,]+") do keys[#keys + 1] = k end
local image = os.getenv("STORM_IMAGE")
local tag = os.getenv("STORM_TAG") or "storm"

local threads = {}
local next_id = 0

function setup(thread)
  next_id = next_id + 1
  thread:set("id", next_id)
  threads[#threads + 1] = thread
end

local sent = 0
local prefix

function init(args)
  created, conflicts, other = 0, 0, 0
  prefix = string.format("%s-%d-%d-", tag, id, os.time())
  math.randomseed(os.time() * 1000 + id)
end

function request()
  sent = sent + 1
  local who = math.random(#tokens)
  local body = string.format(
    '{"gpu_model":"H100-SXM5-80GB","gpu_count":1,"interconnect":"any","start":"%s",' ..
    '"days":1,"image_id":"%s","ssh_key_ids":["%s"]}', dates[math.random(#dates)], image, keys[who])
  return wrk.format("POST", "/v1/rentals", {
    ["Authorization"] = "Bearer " .. tokens[who],
    ["Content-Type"] = "application/json",
    ["Idempotency-Key"] = prefix .. sent,
  }, body)
end

function response(status, headers, body)
  if status == 201 then
    created = created + 1
  elseif status == 409 then
    conflicts = conflicts + 1
  else
    other = other + 1
  end
end

function done(summary, latency, requests)
  local c, k, o = 0, 0, 0
  for _, t in ipairs(threads) do
    c = c + t:get("created")
    k = k + t:get("conflicts")
    o = o + t:get("other")
  end
  io.write(string.format("STORM created=%d conflicts=%d other=%d seconds=%.3f p50_ms=%.2f p99_ms=%.2f\n",
    c, k, o, summary.duration / 1e6, latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
