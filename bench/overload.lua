-- post.lua's start-run, counting the responses by status; prints "status <code>: <count>" lines.
-- Run from the project's root (bench/run.sh is).
dofile("bench/post.lua")

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  statuses = {}
end

function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
end

function done(summary, latency, requests)
  local total = {}
  for _, thread in ipairs(threads) do
    for status, n in pairs(thread:get("statuses")) do
      total[status] = (total[status] or 0) + n
    end
  end
  for status, n in pairs(total) do
    io.write(string.format("status %d: %d\n", status, n))
  end
end
