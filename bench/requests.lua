-- wrk script: POST requests read from $BENCH_REQUESTS, one a line:
-- "path<TAB>Name=value;Name=value<TAB>body" (bench/requests.py writes them).
-- Threads take interleaved lines, so no two requests are the same until the
-- file is exhausted; then it wraps, and the RESULT line says exhausted=1.
local threads = {}
local counter = 0

function setup(thread)
  thread:set("id", counter)
  table.insert(threads, thread)
  counter = counter + 1
end

function init(args)
  reqs = {}
  local n = 0
  for line in io.lines(os.getenv("BENCH_REQUESTS")) do
    local path, hdrs, body = line:match("^([^\t]+)\t([^\t]*)\t(.*)$")
    local h = { ["Content-Type"] = "application/json" }
    for k, v in hdrs:gmatch("([^=;]+)=([^;]*)") do h[k] = v end
    n = n + 1
    reqs[n] = wrk.format("POST", path, h, body)
  end
  nreqs = n
  step = tonumber(os.getenv("BENCH_THREADS"))
  i = id + 1
  wrapped = 0
end

function request()
  local r = reqs[i]
  i = i + step
  if i > nreqs then
    i = (i - 1) % nreqs + 1
    wrapped = 1
  end
  return r
end

function done(summary, latency, requests)
  local exhausted = 0
  for _, t in ipairs(threads) do
    if t:get("wrapped") == 1 then exhausted = 1 end
  end
  io.write(string.format("RESULT rps=%.0f p50_ms=%.2f p99_ms=%.2f errors=%d non2xx=%d requests=%d exhausted=%d\n",
    summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000,
    latency:percentile(99) / 1000,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    summary.errors.status, summary.requests, exhausted))
end
