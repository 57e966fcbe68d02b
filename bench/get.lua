-- GET a run (RUNWAY_BENCH_RUN) with the key in RUNWAY_BENCH_KEY.
wrk.method = "GET"
wrk.path = "/v1/runs/" .. os.getenv("RUNWAY_BENCH_RUN")
wrk.headers["Authorization"] = "Bearer " .. os.getenv("RUNWAY_BENCH_KEY")
