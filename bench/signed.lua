-- wrk script: POST /pay/callback with pre-signed requests read from $BENCH_REQUESTS
-- (lines "timestamp<TAB>signature<TAB>body"). Threads take interleaved lines so
-- no two requests are the same until the file is exhausted; then it wraps.
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
    local ts, sig, body = line:match("^([^\t]+)\t([^\t]+)\t(.*)$")
    n = n + 1
    reqs[n] = wrk.format("POST", "/pay/callback",
      { ["Content-Type"] = "application/json", ["X-Timestamp"] = ts, ["X-Signature"] = sig }, body)
  end
  nreqs = n
  step = tonumber(os.getenv("BENCH_THREADS"))
  i = id + 1
end

function request()
  local r = reqs[i]
  i = i + step
  if i > nreqs then i = (i - 1) % nreqs + 1 end
  return r
end

function done(summary, latency, requests)
  local codes = 0
  io.write(string.format("RESULT rps=%.0f p50_ms=%.2f p99_ms=%.2f errors=%d non2xx=%d\n",
    summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000,
    latency:percentile(99) / 1000,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    summary.errors.status))
end
