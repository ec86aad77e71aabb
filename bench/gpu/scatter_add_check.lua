local dev = gpu.device()
local n, m = 1 << 20, 1000
local P = ((dev:rand("float", {n}, 1) * m):floor():astype("long") + 1):eval()
local v = dev:tensor("float", {n}):set(1)
local r = dev:tensor("float", {m}):scatter_add(1, P, v)
local hp, hr = P:get(), r:get()
local want = {}
for i = 1, m do want[i] = 0 end
for i = 1, n do want[hp[i]] = want[hp[i]] + 1 end
local bad = 0
for i = 1, m do if want[i] ~= hr[i] then bad = bad + 1 end end
print("scatter_add float check: bad", bad, "of", m, "sum", r:sum())
