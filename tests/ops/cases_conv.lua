-- Cases of convolution and pooling (NCHW): conv2d and its two backward ops, max / average /
-- adaptive average pooling and their backward ops. References are direct nested loops over the
-- definitions, in float64; none calls moonflow.
local L = ...
local cases = {}
local function add(c) cases[#cases + 1] = c end

local floor, ceil, huge, abs = math.floor, math.ceil, math.huge, math.abs
local input = L.input

-- the (h, w) pair of a param as a user gives it: nil or {} -> the defaults, n -> (n, n), {h, w}
local function pair(v, dh, dw)
  if v == nil then return dh, dw end
  if type(v) == 'number' then return v, v end
  if #v == 0 then return dh, dw end
  return v[1], v[#v]
end

-- 0-based NCHW offset (1-based into data)
local function at(shape, n, c, h, w) return ((n * shape[2] + c) * shape[3] + h) * shape[4] + w + 1 end

local function zeros(shape)
  local d = {}
  for i = 1, L.numel(shape) do d[i] = 0 end
  return L.array(shape, d)
end

-- convolution --------------------------------------------------------------------------------------
local function conv_geom(xshape, wshape, p)
  local sh, sw = pair(p.stride, 1, 1)
  local ph, pw = pair(p.padding, 0, 0)
  local dh, dw = pair(p.dilation, 1, 1)
  local H, W, kh, kw = xshape[3], xshape[4], wshape[3], wshape[4]
  local Ho = floor((H + 2 * ph - dh * (kh - 1) - 1) / sh) + 1
  local Wo = floor((W + 2 * pw - dw * (kw - 1) - 1) / sw) + 1
  return {N = xshape[1], C = xshape[2], H = H, W = W, O = wshape[1], kh = kh, kw = kw, Ho = Ho, Wo = Wo,
          sh = sh, sw = sw, ph = ph, pw = pw, dh = dh, dw = dw}
end

-- Calls f(n, o, oh, ow, c, i, j, h, w) for every tap of the convolution that reads inside x.
local function each_tap(g, f)
  for n = 0, g.N - 1 do
    for o = 0, g.O - 1 do
      for oh = 0, g.Ho - 1 do
        for ow = 0, g.Wo - 1 do
          for c = 0, g.C - 1 do
            for i = 0, g.kh - 1 do
              local h = oh * g.sh - g.ph + i * g.dh
              if h >= 0 and h < g.H then
                for j = 0, g.kw - 1 do
                  local w = ow * g.sw - g.pw + j * g.dw
                  if w >= 0 and w < g.W then f(n, o, oh, ow, c, i, j, h, w) end
                end
              end
            end
          end
        end
      end
    end
  end
end

-- out[idx] += a * b with its scale sum |a * b| (the bound a float32 sum's rounding is held to)
local function accumulate(out, scale, idx, v)
  out.data[idx] = out.data[idx] + v
  scale[idx] = scale[idx] + abs(v)
end

local function conv_ref(ins, p)
  local x, wt = ins[1], ins[2]
  local g = conv_geom(x.shape, wt.shape, p)
  local yshape = {g.N, g.O, g.Ho, g.Wo}
  local y, scale = zeros(yshape), zeros(yshape).data
  each_tap(g, function(n, o, oh, ow, c, i, j, h, w)
    accumulate(y, scale, at(yshape, n, o, oh, ow), x.data[at(x.shape, n, c, h, w)] * wt.data[at(wt.shape, o, c, i, j)])
  end)
  y.scale = scale
  return y
end

-- gx[n, c, h, w] = sum over the taps that read x[n, c, h, w] of gy * w
local function conv_backward_input_ref(ins, p)
  local gy, wt, like = ins[1], ins[2], ins[3]
  local g = conv_geom(like.shape, wt.shape, p)
  local gx, scale = zeros(like.shape), zeros(like.shape).data
  each_tap(g, function(n, o, oh, ow, c, i, j, h, w)
    accumulate(gx, scale, at(like.shape, n, c, h, w), gy.data[at(gy.shape, n, o, oh, ow)] * wt.data[at(wt.shape, o, c, i, j)])
  end)
  gx.scale = scale
  return gx
end

-- gw[o, c, i, j] = sum over the batch and output positions of gy * the x the tap reads
local function conv_backward_weight_ref(ins, p)
  local gy, x, like = ins[1], ins[2], ins[3]
  local g = conv_geom(x.shape, like.shape, p)
  local gw, scale = zeros(like.shape), zeros(like.shape).data
  each_tap(g, function(n, o, oh, ow, c, i, j, h, w)
    accumulate(gw, scale, at(like.shape, o, c, i, j), gy.data[at(gy.shape, n, o, oh, ow)] * x.data[at(x.shape, n, c, h, w)])
  end)
  gw.scale = scale
  return gw
end

-- name, x, w, params, args (as a user writes them), empty variants of {x, w}
local CONVS = {
  {'conv2d', {2, 3, 6, 5}, {4, 3, 3, 2}, {}, nil,
   {{{0, 3, 6, 5}, {4, 3, 3, 2}}, {{2, 0, 6, 5}, {4, 0, 3, 2}}, {{2, 3, 6, 5}, {0, 3, 3, 2}}}},
  {'_stride_pad', {2, 2, 7, 6}, {3, 2, 3, 3}, {stride = 2, padding = 1}, {2, 1}},
  {'_dilation', {1, 2, 8, 7}, {2, 2, 3, 2}, {stride = {1, 2}, padding = {2, 1}, dilation = {2}}},
  {'_nonsquare', {2, 3, 7, 9}, {2, 3, 2, 4}, {stride = {2, 3}, padding = {0, 2}}},
  {'_1x1', {2, 3, 4, 5}, {5, 3, 1, 1}, {}},                        -- x is its own column matrix
  {'_1x1_stride', {2, 3, 5, 5}, {2, 3, 1, 1}, {stride = 2}},
  {'_pad_wide', {1, 2, 3, 3}, {2, 2, 3, 3}, {padding = {2, 3}}},     -- windows entirely in padding
  {'_batch_threads', {5, 3, 10, 9}, {4, 3, 3, 3}, {padding = 1}},    -- the batch split over threads
  {'_one_image', {1, 4, 12, 11}, {3, 4, 3, 2}, {stride = {1, 2}}},  -- threads on channels and GEMM
  {'_chunks', {40, 3, 6, 6}, {4, 3, 3, 3}, {}},                    -- several images per GEMM, several GEMMs per thread
  {'_rows_17', {2, 2, 5, 17}, {3, 2, 3, 3}, {padding = 1}},        -- rows of 17, 16 and 15: conv.cc's masked row moves
  -- column matrices past the tile size (conv.cc kTileBytes): images in tiles of output rows, the
  -- last one shorter; with the batch split over threads, and a single image (threads on channels)
  {'_tiles', {3, 16, 48, 48}, {2, 16, 3, 3}, {padding = 1}},     -- 1.3 MB a image, 37 + 11 rows
  -- 1.3 MB, 20 + 6 rows
  {'_tiles_stride_dilation', {1, 32, 50, 44}, {2, 32, 3, 3}, {stride = {2, 1}, padding = {3, 2}, dilation = 2}},
}
for _, v in ipairs(CONVS) do
  local name, xs, ws, params, args, empty = unpack(v)
  if name:sub(1, 1) == '_' then name = 'conv2d' .. name end
  add{name = name, op = 'conv2d', inputs = {input(xs), input(ws)}, params = params, args = args, ref = conv_ref,
      empty = empty}
  -- the backward ops on the same geometry
  local g = conv_geom(xs, ws, params)
  local ys = {g.N, g.O, g.Ho, g.Wo}
  local function swap_empty(f)
    if not empty then return nil end
    local out = {}
    for k, e in ipairs(empty) do out[k] = f(e[1], e[2]) end
    return out
  end
  add{name = name:gsub('^conv2d', 'conv2d_backward_input'), op = 'conv2d_backward_input',
      inputs = {input(ys), input(ws), input(xs)}, params = params, ref = conv_backward_input_ref,
      empty = swap_empty(function(x, w)
        local eg = conv_geom(x, w, params)
        return {{eg.N, eg.O, eg.Ho, eg.Wo}, w, x}
      end)}
  add{name = name:gsub('^conv2d', 'conv2d_backward_weight'), op = 'conv2d_backward_weight',
      inputs = {input(ys), input(xs), input(ws)}, params = params, ref = conv_backward_weight_ref,
      empty = swap_empty(function(x, w)
        local eg = conv_geom(x, w, params)
        return {{eg.N, eg.O, eg.Ho, eg.Wo}, x, w}
      end)}
end
add{name = 'conv2d_channels', op = 'conv2d', inputs = {input({1, 3, 5, 5}), input({2, 2, 3, 3})},
    error = 'conv2d: x is 1x3x5x5, w is 2x2x3x3; x:size(2) = 3 (input channels) must equal w:size(2) = 2'}
add{name = 'conv2d_kernel_too_large', op = 'conv2d', inputs = {input({1, 1, 4, 4}), input({1, 1, 7, 3})},
    params = {padding = 1}, error = 'larger than the input padded by 1x1 (6x6)'}
add{name = 'conv2d_dilated_too_large', op = 'conv2d', inputs = {input({1, 1, 4, 4}), input({1, 1, 3, 3})},
    params = {dilation = 2}, error = 'would be 0x0, not positive'}
add{name = 'conv2d_bad_stride', op = 'conv2d', inputs = {input({1, 1, 4, 4}), input({1, 1, 3, 3})},
    params = {stride = {1, 0}}, error = 'stride is {1, 0}; each value must be at least 1'}
add{name = 'conv2d_three_values', op = 'conv2d', inputs = {input({1, 1, 4, 4}), input({1, 1, 3, 3})},
    params = {padding = {1, 1, 1}}, error = 'padding has 3 values; give 1 or 2 integers'}
add{name = 'conv2d_3d', op = 'conv2d', inputs = {input({3, 5, 5}), input({1, 3, 3, 3})},
    error = 'x is 3x5x5; expected 4 dims'}
add{name = 'conv2d_int', op = 'conv2d', inputs = {input({1, 1, 3, 3}), input({1, 1, 2, 2})}, dtypes = {'int32'},
    error = 'expected float32 or float64'}
add{name = 'conv2d_mixed_dtypes', op = 'conv2d', inputs = {input({1, 1, 3, 3}), input({1, 1, 2, 2}, {dtype = 'float64'})},
    dtypes = {'float32'}, error = 'expected one dtype'}
add{name = 'conv2d_backward_input_bad_gy', op = 'conv2d_backward_input',
    inputs = {input({2, 4, 3, 4}), input({4, 3, 3, 2}), input({2, 3, 6, 5})},
    error = 'gy is 2x4x3x4, but conv2d of like 2x3x6x5 by w 4x3x3x2 gives 2x4x4x4'}
add{name = 'conv2d_backward_weight_bad_gy', op = 'conv2d_backward_weight',
    inputs = {input({2, 5, 4, 4}), input({2, 3, 6, 5}), input({4, 3, 3, 2})}, error = 'gy must have that shape'}

-- pooling ------------------------------------------------------------------------------------------
local function pool_geom(xshape, p)
  local kh, kw = pair(p.kernel_size)
  local sh, sw = pair(p.stride, kh, kw)
  local ph, pw = pair(p.padding, 0, 0)
  local H, W = xshape[3], xshape[4]
  return {N = xshape[1], C = xshape[2], H = H, W = W, kh = kh, kw = kw, sh = sh, sw = sw, ph = ph, pw = pw,
          Ho = floor((H + 2 * ph - kh) / sh) + 1, Wo = floor((W + 2 * pw - kw) / sw) + 1}
end

-- Calls f(n, c, oh, ow, cells, div) per window: cells are the {h, w} inside x in row-major order;
-- div the avg divisor (PyTorch's: with padding counted, the window clipped to the padded input).
local function each_window(g, include_pad, f)
  for n = 0, g.N - 1 do
    for c = 0, g.C - 1 do
      for oh = 0, g.Ho - 1 do
        for ow = 0, g.Wo - 1 do
          local h0, w0 = oh * g.sh - g.ph, ow * g.sw - g.pw
          local cells = {}
          for h = h0, h0 + g.kh - 1 do
            for w = w0, w0 + g.kw - 1 do
              if h >= 0 and h < g.H and w >= 0 and w < g.W then cells[#cells + 1] = {h, w} end
            end
          end
          local div = #cells
          if include_pad then
            div = (math.min(h0 + g.kh, g.H + g.ph) - h0) * (math.min(w0 + g.kw, g.W + g.pw) - w0)
          end
          f(n, c, oh, ow, cells, div)
        end
      end
    end
  end
end

-- index into cells of the first maximum (the first NaN if any)
local function first_max(x, n, c, cells)
  local best, bi = -huge, 1
  for k, hw in ipairs(cells) do
    local v = x.data[at(x.shape, n, c, hw[1], hw[2])]
    if v ~= v then return k end
    if v > best then best, bi = v, k end
  end
  return bi
end

local function max_pool_ref(ins, p)
  local x = ins[1]
  local g = pool_geom(x.shape, p)
  local yshape = {g.N, g.C, g.Ho, g.Wo}
  local y = zeros(yshape)
  each_window(g, false, function(n, c, oh, ow, cells)
    local hw = cells[first_max(x, n, c, cells)]
    y.data[at(yshape, n, c, oh, ow)] = x.data[at(x.shape, n, c, hw[1], hw[2])]
  end)
  return y
end

local function max_pool_backward_ref(ins, p)
  local gy, x = ins[1], ins[2]
  local g = pool_geom(x.shape, p)
  local gx, scale = zeros(x.shape), zeros(x.shape).data
  each_window(g, false, function(n, c, oh, ow, cells)
    local hw = cells[first_max(x, n, c, cells)]
    accumulate(gx, scale, at(x.shape, n, c, hw[1], hw[2]), gy.data[at(gy.shape, n, c, oh, ow)])
  end)
  gx.scale = scale
  return gx
end

local function avg_include(p) return p.count_include_pad ~= false end

local function avg_pool_ref(ins, p)
  local x = ins[1]
  local g = pool_geom(x.shape, p)
  local yshape = {g.N, g.C, g.Ho, g.Wo}
  local y, scale = zeros(yshape), zeros(yshape).data
  each_window(g, avg_include(p), function(n, c, oh, ow, cells, div)
    local s, sa = 0, 0
    for _, hw in ipairs(cells) do
      local v = x.data[at(x.shape, n, c, hw[1], hw[2])]
      s, sa = s + v, sa + abs(v)
    end
    local k = at(yshape, n, c, oh, ow)
    y.data[k], scale[k] = s / div, sa / div
  end)
  y.scale = scale
  return y
end

local function avg_pool_backward_ref(ins, p)
  local gy, like = ins[1], ins[2]
  local g = pool_geom(like.shape, p)
  local gx, scale = zeros(like.shape), zeros(like.shape).data
  each_window(g, avg_include(p), function(n, c, oh, ow, cells, div)
    local v = gy.data[at(gy.shape, n, c, oh, ow)] / div
    for _, hw in ipairs(cells) do accumulate(gx, scale, at(like.shape, n, c, hw[1], hw[2]), v) end
  end)
  gx.scale = scale
  return gx
end

-- adaptive windows: output row i covers rows floor(i*H/Ho) .. ceil((i+1)*H/Ho) - 1
local function each_adaptive(shape, p, f)
  local Ho, Wo = pair(p.output_size)
  local N, C, H, W = unpack(shape)
  for n = 0, N - 1 do
    for c = 0, C - 1 do
      for oh = 0, Ho - 1 do
        for ow = 0, Wo - 1 do
          local cells = {}
          for h = floor(oh * H / Ho), ceil((oh + 1) * H / Ho) - 1 do
            for w = floor(ow * W / Wo), ceil((ow + 1) * W / Wo) - 1 do cells[#cells + 1] = {h, w} end
          end
          f(n, c, oh, ow, cells)
        end
      end
    end
  end
  return {N, C, Ho, Wo}
end

local function adaptive_ref(ins, p)
  local x = ins[1]
  local Ho, Wo = pair(p.output_size)
  local yshape = {x.shape[1], x.shape[2], Ho, Wo}
  local y, scale = zeros(yshape), zeros(yshape).data
  each_adaptive(x.shape, p, function(n, c, oh, ow, cells)
    local s, sa = 0, 0
    for _, hw in ipairs(cells) do
      local v = x.data[at(x.shape, n, c, hw[1], hw[2])]
      s, sa = s + v, sa + abs(v)
    end
    local k = at(yshape, n, c, oh, ow)
    y.data[k], scale[k] = s / #cells, sa / #cells
  end)
  y.scale = scale
  return y
end

local function adaptive_backward_ref(ins, p)
  local gy, like = ins[1], ins[2]
  local gx, scale = zeros(like.shape), zeros(like.shape).data
  each_adaptive(like.shape, p, function(n, c, oh, ow, cells)
    local v = gy.data[at(gy.shape, n, c, oh, ow)] / #cells
    for _, hw in ipairs(cells) do accumulate(gx, scale, at(like.shape, n, c, hw[1], hw[2]), v) end
  end)
  gx.scale = scale
  return gx
end

local TIES = {step = 0.5}  -- equal values in one window: the first one wins
local NANS = {nan = 5}
-- suffix, x, params, args, domain of x, empty variants of x, avg only
local POOLS = {
  {'', {2, 3, 6, 8}, {kernel_size = 2}, {2}, nil, {{0, 3, 6, 8}, {2, 0, 6, 8}}},
  {'_odd', {2, 2, 7, 9}, {kernel_size = {2}}},                       -- rows and columns no window covers
  {'_wide', {2, 3, 4, 42}, {kernel_size = 2}},                        -- full vectors and a tail
  {'_overlap', {2, 2, 5, 6}, {kernel_size = 3, stride = 1, padding = 1}, {3, 1, 1}},
  {'_stride_pad', {2, 2, 7, 6}, {kernel_size = 3, stride = 2, padding = 1}},
  {'_nonsquare', {1, 3, 5, 7}, {kernel_size = {2, 3}, stride = {1, 2}, padding = {1, 1}}},
  {'_stride_gt_kernel', {2, 2, 9, 8}, {kernel_size = 2, stride = 3}},
  {'_threads', {4, 16, 24, 24}, {kernel_size = 2}},
  {'_narrow', {2, 3, 4, 6}, {kernel_size = 2}},                       -- 3 windows a row: scalar / short vectors
  {'_wide_nan', {1, 2, 4, 42}, {kernel_size = 2}, nil, NANS},         -- NaN in full and overlapping vectors
  {'_wide_ties', {1, 2, 6, 26}, {kernel_size = 2}, nil, TIES},
  {'_wide_overlap', {1, 2, 6, 40}, {kernel_size = 3, stride = 2, padding = 1}},
  {'_ties', {2, 3, 6, 8}, {kernel_size = 2}, nil, TIES},
  {'_ties_overlap', {2, 2, 5, 6}, {kernel_size = 3, stride = 1, padding = 1}, nil, TIES},
  {'_nan', {2, 3, 6, 8}, {kernel_size = 2}, nil, NANS},
  {'_nan_overlap', {2, 2, 5, 6}, {kernel_size = {3, 2}, stride = 1, padding = 1}, nil, NANS},
  {'_exclude_pad', {2, 2, 7, 6}, {kernel_size = 3, stride = 2, padding = 1, count_include_pad = false}, nil, nil, nil, true},
}
for _, v in ipairs(POOLS) do
  local suffix, xs, params, args, dom, empty, avg_only = unpack(v)
  local g = pool_geom(xs, params)
  local ys = {g.N, g.C, g.Ho, g.Wo}
  local function with_gy(list)
    if not list then return nil end
    local out = {}
    for k, x in ipairs(list) do
      local eg = pool_geom(x, params)
      out[k] = {{eg.N, eg.C, eg.Ho, eg.Wo}, x}
    end
    return out
  end
  local singles = {}
  for k, x in ipairs(empty or {}) do singles[k] = {x} end
  local kinds = avg_only and {'avg'} or {'max', 'avg'}
  for _, kind in ipairs(kinds) do
    local is_nan = dom == NANS
    if kind == 'max' or not (dom == TIES or is_nan) then  -- ties and NaN matter to max only
      local fwd, bwd = kind .. '_pool2d', kind .. '_pool2d_backward'
      add{name = fwd .. suffix, op = fwd, inputs = {input(xs, dom)}, params = params, args = args,
          ref = kind == 'max' and max_pool_ref or avg_pool_ref, exact = kind == 'max', empty = #singles > 0 and singles or nil}
      add{name = bwd .. suffix, op = bwd, inputs = {input(ys), input(xs, dom)}, params = params,
          ref = kind == 'max' and max_pool_backward_ref or avg_pool_backward_ref, empty = with_gy(empty)}
    end
  end
end
add{name = 'max_pool2d_pad_too_large', op = 'max_pool2d', inputs = {input({1, 1, 5, 5})},
    params = {kernel_size = 3, padding = 2}, error = 'padding 2x2 is more than half of kernel_size 3x3'}
add{name = 'max_pool2d_kernel_too_large', op = 'max_pool2d', inputs = {input({1, 1, 2, 5})},
    params = {kernel_size = 3}, error = 'kernel_size 3x3 is larger than the input padded by 0x0 (2x5)'}
add{name = 'max_pool2d_no_kernel', op = 'max_pool2d', inputs = {input({1, 1, 4, 4})},
    error = "param 'kernel_size' is required"}
add{name = 'avg_pool2d_3d', op = 'avg_pool2d', inputs = {input({1, 4, 4})}, params = {kernel_size = 2},
    error = 'x is 1x4x4; expected 4 dims'}
add{name = 'avg_pool2d_empty_plane', op = 'avg_pool2d', inputs = {input({1, 1, 0, 4})}, params = {kernel_size = 1},
    error = 'its height and width must be at least 1'}
add{name = 'max_pool2d_backward_bad_gy', op = 'max_pool2d_backward', inputs = {input({2, 3, 3, 3}), input({2, 3, 6, 8})},
    params = {kernel_size = 2}, error = 'gy is 2x3x3x3, but max_pool2d of x 2x3x6x8 gives 2x3x3x4'}
add{name = 'max_pool2d_int', op = 'max_pool2d', inputs = {input({1, 1, 4, 4})}, params = {kernel_size = 2},
    dtypes = {'int64'}, error = 'expected float32 or float64'}

-- adaptive average pooling: suffix, x, output_size, args, empty variants of x
local ADAPTIVE = {
  {'', {2, 3, 7, 5}, {3, 2}, {{3, 2}}, {{0, 3, 7, 5}, {2, 0, 7, 5}}},
  {'_global', {2, 3, 4, 5}, {1}},
  {'_same', {1, 2, 4, 6}, {4, 6}},
  {'_upsample', {1, 2, 3, 2}, {5, 4}},   -- more outputs than inputs: windows overlap
  {'_divides', {2, 4, 8, 6}, {4, 3}},    -- equal windows, as avg_pool2d would make
}
for _, v in ipairs(ADAPTIVE) do
  local suffix, xs, out, args, empty = unpack(v)
  local params = {output_size = out}
  local Ho, Wo = pair(out)
  local singles, pairs_ = nil, nil
  if empty then
    singles, pairs_ = {}, {}
    for k, x in ipairs(empty) do
      singles[k] = {x}
      pairs_[k] = {{x[1], x[2], Ho, Wo}, x}
    end
  end
  add{name = 'adaptive_avg_pool2d' .. suffix, op = 'adaptive_avg_pool2d', inputs = {input(xs)}, params = params,
      args = args, ref = adaptive_ref, empty = singles}
  add{name = 'adaptive_avg_pool2d_backward' .. suffix, op = 'adaptive_avg_pool2d_backward',
      inputs = {input({xs[1], xs[2], Ho, Wo}), input(xs)}, params = params, ref = adaptive_backward_ref, empty = pairs_}
end
add{name = 'adaptive_avg_pool2d_zero_size', op = 'adaptive_avg_pool2d', inputs = {input({1, 1, 4, 4})},
    params = {output_size = {2, 0}}, error = 'output_size is {2, 0}; each value must be at least 1'}
add{name = 'adaptive_avg_pool2d_backward_bad_gy', op = 'adaptive_avg_pool2d_backward',
    inputs = {input({1, 1, 2, 3}), input({1, 1, 4, 4})}, params = {output_size = 2},
    error = 'gy is 1x1x2x3, but adaptive_avg_pool2d of like 1x1x4x4 gives 1x1x2x2'}

return cases
