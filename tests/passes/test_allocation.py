"""Shared-memory allocation: scratch sizes, liveness, first-fit offsets, the attributes the lowering reads."""
import pytest
from mlir import ir

from tritium.dialects import layouts, make_context
from tritium.passes.analysis.allocation import (Allocation, allocate_shared_memory, convert_scratch_size, offset_of,
                                                shared_size, size_of)

from .test_coalesce import ops_named

B = layouts.BlockedLayout
SH = "#ttg.shared<1 : i32, 1 : i32, 1 : i32, array<i32: 1, 0>>"
MD = f"!ttg.memdesc<array<i64: 16, 16>, f16, {SH}>"   # 512 bytes
MD2 = f"!ttg.memdesc<array<i64: 32, 16>, f32, {SH}>"  # 2048 bytes
A1 = "#ttg.blocked<array<i32: 1>, array<i32: 32>, array<i32: 4>, array<i32: 0>>"
C1 = "#ttg.blocked<array<i32: 4>, array<i32: 32>, array<i32: 4>, array<i32: 0>>"
HEADER = f'#A = {A1}\n#C = {C1}\nmodule attributes {{"ttg.num-warps" = 4 : i32, "ttg.threads-per-warp" = 32 : i32}} {{\n'
T16 = "tensor<16x16xf16, #ttg.blocked<array<i32: 1, 1>, array<i32: 2, 16>, array<i32: 4, 1>, array<i32: 1, 0>>>"
T32 = "tensor<32x16xf32, #ttg.blocked<array<i32: 1, 1>, array<i32: 2, 16>, array<i32: 4, 1>, array<i32: 1, 0>>>"


def module(body, args="%t: tensor<1024xf32, #A>, %a: " + T16 + ", %b: " + T32, extra=""):
    return HEADER + f"func.func public @k({args}) {{\n{body}\n  return\n}}\n{extra}}}\n"


def parse(src):
    ctx = make_context()
    with ctx, ir.Location.unknown():
        return ctx, ir.Module.parse(src)


def t(shape, layout):
    return ir.RankedTensorType.get(list(shape), ir.F32Type.get(), layout.to_attr())


def test_convert_scratch_is_the_whole_tensor():
    ctx = make_context()
    with ctx, ir.Location.unknown():
        src = B((1, 4), (1, 32), (4, 1), (1, 0))
        dst = B((1, 1), (1, 32), (1, 4), (1, 0))
        # the lowering writes the whole tensor, row-major, then reads it back (one round)
        assert convert_scratch_size(t((64, 128), src), t((64, 128), dst)) == 64 * 128 * 4
        assert convert_scratch_size(t((1024,), B((4,), (32,), (4,), (0,))), t((1024,), B((1,), (32,), (4,), (0,)))) \
            == 1024 * 4
        a = B((1, 4), (8, 4), (4, 1), (1, 0))
        b = B((4, 1), (4, 8), (1, 4), (0, 1))
        assert convert_scratch_size(t((32, 32), a), t((32, 32), b)) == 32 * 32 * 4


def test_register_only_conversion_needs_no_scratch():
    ctx = make_context()
    with ctx, ir.Location.unknown():
        a = B((1, 1), (1, 32), (1, 4), (1, 0))
        b = B((1, 1), (1, 32), (1, 4), (0, 1))  # same threads, registers in another order
        assert convert_scratch_size(t((2, 128), a), t((2, 128), b)) == 0
        assert convert_scratch_size(t((2, 128), a), t((2, 128), a)) == 0


def test_reduce_scratch_and_warp_synchronous_reduce():
    src = module("""
  %r = "tt.reduce"(%t) {axis = 0 : i32, combine = @add, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<1024xf32, #A>) -> f32
  %s = "tt.reduce"(%b) {axis = 1 : i32, combine = @add, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (""" + T32 + """) -> tensor<32xf32, #ttg.slice<1 : i32, #ttg.blocked<array<i32: 1, 1>, array<i32: 2, 16>, array<i32: 4, 1>, array<i32: 1, 0>>>>
  %u = "tt.reduce"(%b) {axis = 0 : i32, combine = @add, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (""" + T32 + """) -> tensor<16xf32, #ttg.slice<0 : i32, #ttg.blocked<array<i32: 1, 1>, array<i32: 2, 16>, array<i32: 4, 1>, array<i32: 1, 0>>>>""",
                 extra="func.func private @add(%x: f32, %y: f32) -> f32 {\n %z = arith.addf %x, %y : f32\n return %z : f32\n}\n")
    ctx, m = parse(src)
    with ctx:
        alloc = Allocation(m.operation)
        r, s, u = ops_named(m, "tt.reduce")
        assert alloc.size(r) == 4 * 4  # 4 warps along the axis, one f32 each
        assert alloc.size(s) == 0 and alloc.offset(s) is None  # rows lie within a warp: shuffles only
        assert alloc.size(u) == 4 * 16 * 4  # 4 warps along axis 0, 16 columns
        assert alloc.total == 256


def test_view_ops_moving_data_between_threads_get_scratch():
    """A broadcast / expand_dims whose layouts put elements in other threads moves its source through shared memory:
    the analysis places that buffer (live during the op only), as it does a convert_layout's; one within registers
    needs none (an unplaced one went past every other buffer: 256 bytes that cost the gfx942 matmul half its
    occupancy)."""
    row = "#ttg.blocked<array<i32: 1, 1>, array<i32: 2, 16>, array<i32: 4, 1>, array<i32: 1, 0>>"
    col = "#ttg.blocked<array<i32: 1, 1>, array<i32: 32, 1>, array<i32: 1, 4>, array<i32: 1, 0>>"
    src = module(f"""
  %v = "tt.expand_dims"(%x) {{axis = 0 : i32}} : (tensor<16xf32, #ttg.slice<0 : i32, {row}>>) -> tensor<1x16xf32, {row}>
  %in = "tt.broadcast"(%v) : (tensor<1x16xf32, {row}>) -> tensor<32x16xf32, {row}>
  %w = "tt.expand_dims"(%y) {{axis = 0 : i32}} : (tensor<16xf32, #ttg.slice<0 : i32, {col}>>) -> tensor<1x16xf32, {col}>
  %out = "tt.broadcast"(%w) : (tensor<1x16xf32, {col}>) -> tensor<32x16xf32, {row}>""",
                 args=f"%x: tensor<16xf32, #ttg.slice<0 : i32, {row}>>, %y: tensor<16xf32, #ttg.slice<0 : i32, {col}>>")
    ctx, m = parse(src)
    with ctx:
        alloc = Allocation(m.operation)
        e1, e2 = ops_named(m, "tt.expand_dims")
        within, across = ops_named(m, "tt.broadcast")
        assert alloc.size(e1) == alloc.size(e2) == 0 and alloc.size(within) == 0
        assert alloc.size(across) == 16 * 4 and alloc.offset(across) == 0
        assert alloc.total == 64


def test_explicit_buffers_share_memory_only_when_their_lifetimes_do_not_overlap():
    src = module(f"""
  %m1 = "ttg.local_alloc"(%a) : ({T16}) -> {MD}
  %x1 = "ttg.local_load"(%m1) : ({MD}) -> {T16}
  "ttg.local_dealloc"(%m1) : ({MD}) -> ()
  %m2 = "ttg.local_alloc"(%b) : ({T32}) -> {MD2}
  %m3 = "ttg.local_alloc"(%a) : ({T16}) -> {MD}
  %x2 = "ttg.local_load"(%m2) : ({MD2}) -> {T32}
  %x3 = "ttg.local_load"(%m3) : ({MD}) -> {T16}""")
    ctx, m = parse(src)
    with ctx:
        alloc = allocate_shared_memory(m.operation)
        m1, m2, m3 = ops_named(m, "ttg.local_alloc")
        assert [size_of(x) for x in (m1, m2, m3)] == [512, 2048, 512]
        # m2 (largest) first at 0; m3 overlaps m2 in time -> after it; m1 is dead before m2/m3 start -> 0
        assert [offset_of(x) for x in (m1, m2, m3)] == [0, 0, 2048]
        assert shared_size(m.operation) == 2560 == alloc.total
        text = str(m)
        assert "allocation.offset = 2048 : i32" in text and "ttg.shared = 2560 : i32" in text
        ir.Module.parse(text)


def test_buffer_used_in_a_loop_stays_live_for_the_whole_loop():
    src = module(f"""
  %m1 = "ttg.local_alloc"(%a) : ({T16}) -> {MD}
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c4 = arith.constant 4 : i32
  scf.for %i = %c0 to %c4 step %c1 : i32 {{
    %x = "ttg.local_load"(%m1) : ({MD}) -> {T16}
    %cv = "ttg.convert_layout"(%t) : (tensor<1024xf32, #A>) -> tensor<1024xf32, #C>
    "tt.print"(%x, %cv) {{prefix = "", operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0>}} : ({T16}, tensor<1024xf32, #C>) -> ()
  }}
  %cv2 = "ttg.convert_layout"(%t) : (tensor<1024xf32, #A>) -> tensor<1024xf32, #C>
  "tt.print"(%cv2) {{prefix = "", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>}} : (tensor<1024xf32, #C>) -> ()""")
    ctx, m = parse(src)
    with ctx:
        alloc = Allocation(m.operation)
        (m1,) = ops_named(m, "ttg.local_alloc")
        cv, cv2 = ops_named(m, "ttg.convert_layout")
        assert alloc.size(cv) == 1024 * 4
        # the convert in the loop runs while m1 is live: disjoint; the one after the loop may reuse m1's bytes
        assert alloc.offset(cv) == 0 and alloc.offset(m1) == 4096
        assert alloc.offset(cv2) == 0
        assert alloc.total == 4096 + 512


def test_scalar_atomic_with_a_used_result_gets_scratch():
    src = module("""
  %v = arith.constant 1.0 : f32
  %old = "tt.atomic_rmw"(%p, %v) {atomic_rmw_op = 5 : i32, sem = 4 : i32, scope = 1 : i32, operandSegmentSizes = array<i32: 1, 1, 0>} : (!tt.ptr<f32>, f32) -> f32
  %un = "tt.atomic_rmw"(%p, %v) {atomic_rmw_op = 5 : i32, sem = 4 : i32, scope = 1 : i32, operandSegmentSizes = array<i32: 1, 1, 0>} : (!tt.ptr<f32>, f32) -> f32
  "tt.print"(%old) {prefix = "", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (f32) -> ()""",
                 args="%p: !tt.ptr<f32>")
    ctx, m = parse(src)
    with ctx:
        alloc = Allocation(m.operation)
        used, unused = ops_named(m, "tt.atomic_rmw")
        assert alloc.size(used) == 4 and alloc.size(unused) == 0


def test_no_shared_memory():
    ctx, m = parse(module("", args=""))
    with ctx:
        assert allocate_shared_memory(m.operation).total == 0
        assert shared_size(m.operation) == 0
        assert "ttg.shared = 0 : i32" in str(m)


@pytest.mark.parametrize("callee_total", [4096])
def test_call_of_a_function_using_shared_memory(callee_total):
    src = HEADER + f"""
func.func private @f(%t: tensor<1024xf32, #A>) {{
  %cv = "ttg.convert_layout"(%t) : (tensor<1024xf32, #A>) -> tensor<1024xf32, #C>
  "tt.print"(%cv) {{prefix = "", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>}} : (tensor<1024xf32, #C>) -> ()
  return
}}
func.func public @k(%t: tensor<1024xf32, #A>, %a: {T16}) {{
  %m1 = "ttg.local_alloc"(%a) : ({T16}) -> {MD}
  func.call @f(%t) : (tensor<1024xf32, #A>) -> ()
  %x = "ttg.local_load"(%m1) : ({MD}) -> {T16}
  return
}}
}}
"""
    ctx, m = parse(src)
    with ctx:
        alloc = allocate_shared_memory(m.operation)
        (call,) = ops_named(m, "func.call")
        assert alloc.size(call) == callee_total
        assert alloc.total == callee_total + 512
