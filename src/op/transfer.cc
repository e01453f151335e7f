// Copies within and between devices: copy and fill write a tensor in place; to moves a tensor to
// another device through that device's host copies (src/core/kernel_table.h). cast is in elemwise.cc.
#include "../core/device.h"
#include "../core/writes.h"
#include "registry.h"

namespace mf {

namespace {

// copy(dst, src), fill(x, value): the source broadcasts to the destination (fill's is one element),
// which is written in place and returned (a view of it). The rule and messages are the kernel's
// (src/core/writes.h).
void write_shape(InferCtx& c, const char* dst_name) {
  const mf_tensor& dst = c.input(0);
  check_broadcast(c.input(1), dst, c.name());
  check_writable(dst, c.name(), dst_name);
  c.set_view(0, shape_of(dst), Shape(dst.strides, dst.strides + dst.ndim), 0);
}
void copy_shape(InferCtx& c) { write_shape(c, "destination"); }
void fill_shape(InferCtx& c) {
  if (c.input(1).count != 1) fail(c.name(), ": value is ", shape_str(c.input(1)), "; expected one element (or a number)");
  write_shape(c, "tensor");
}

// to(x, device): x's shape and dtype on the device with that id.
void to_shape(InferCtx& c) {
  int64_t id = c.p.get_int("device");
  if (id < 0 || id >= device_count())
    fail(c.name(), ": device id ", id, " is not registered (", device_count(), " devices are)");
  c.set_out(0, c.in_shape(0));
  c.out[0].device_id = int32_t(id);
}

}  // namespace

const char* const kCopyKernel = R"lua(
function(ins, outs, p, K)
  local y, dst, src = outs[1], ins[1], ins[2]
  return function() K.copy(dst, src); K.alias_whole(y, dst) end
end)lua";

void register_transfer_ops() {
  MF_REGISTER_OP(copy)
      .alias("copy_")
      .describe("Writes src's values into dst (src broadcast to dst's shape, converted to dst's dtype) and "
                "returns dst. Both must be on one device (move one with :to(...)).")
      .inputs({"dst", "src"})
      .view()
      .writes()
      .infer_shape(copy_shape)
      .infer_type(same_type)
      .lua_compute(MF_CPU, kCopyKernel);

  MF_REGISTER_OP(fill)
      .alias("fill_")
      .describe("Writes value (a number, or a one-element tensor, converted to x's dtype) into every element of "
                "x and returns x.")
      .inputs({"x", "value"})
      .view()
      .writes()
      .infer_shape(fill_shape)
      .infer_type(same_type)
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, x, v = outs[1], ins[1], ins[2]
  if v._device_id == K.HOST then
    -- the value read in place (an entry serves one dtype and device): v:item()'s checks per call were
    -- a tenth of a 64 KB fill
    local pt = mf._PTR[v._dtype_id]
    return function() K.fill(x, tonumber(ffi.cast(pt, v._ptr)[0])); K.alias_whole(y, x) end
  end
  return function() K.fill(x, v:item()); K.alias_whole(y, x) end
end)lua");

  MF_REGISTER_OP(to)
      .describe("A copy of x on another device (t:to('cpu'); t:to(name) returns t itself when it is there "
                "already). mf.devices() lists the device names.")
      .inputs({"x"})
      .param(Field::integer("device", 0, "Id of the target device (the call syntax takes its name).").mandatory())
      .infer_shape(to_shape)
      .infer_type(same_type)
      .lua_adapter(R"lua(
function(op, x, device)
  if type(device) == 'table' then device = device.device end
  return {x}, {device = type(device) == 'number' and device or mf._device_id(device, 'to')}
end)lua")
      .lua_compute(MF_CPU, R"lua(
function(ins, outs, p, K)
  local y, x = outs[1], ins[1]
  if x._device_id == y._device_id then return function() K.copy(y, x) end end
  local Ky = K.of_device(y._device_id)
  if x._device_id == K.HOST then return function() Ky.copy_from_host(y, x) end end
  if y._device_id == K.HOST then return function() K.copy_to_host(y, x) end end
  local h = K.header(y, y)  -- between two devices: through a host buffer made once per bind
  h._device_id = K.HOST
  h = mf._new_like_meta(h, 'to')
  return function() K.copy_to_host(h, x); Ky.copy_from_host(y, h) end
end)lua")
      .gradient("function(x, y, gy) if mf.is_tensor(x) then return {gy:to(x:device())} end return {gy} end");
}

}  // namespace mf
