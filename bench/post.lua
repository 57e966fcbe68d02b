-- POST /v1/workflows/hello/runs with the key in RUNWAY_BENCH_KEY.
wrk.method = "POST"
wrk.body = '{"project":"bench"}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("RUNWAY_BENCH_KEY")
