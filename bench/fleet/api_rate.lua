-- wrk at a modest, steady rate: each connection waits DELAY_MS between requests (wrk's
-- delay hook), so the API is measured beside the agents rather than saturated.
local token = os.getenv("FLEET_TOKEN")
local pause = tonumber(os.getenv("DELAY_MS") or "20")
if token and token ~= "" then
  wrk.headers["Authorization"] = "Bearer " .. token
end
function delay()
  return pause
end
