-- wrk script: the default request, plus the same RESULT line as requests.lua.
function done(summary, latency, requests)
  io.write(string.format("RESULT rps=%.0f p50_ms=%.2f p99_ms=%.2f errors=%d non2xx=%d requests=%d exhausted=0\n",
    summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000,
    latency:percentile(99) / 1000,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    summary.errors.status, summary.requests))
end
