import pytest
from mlir import ir

from tritium.dialects import make_context, tt
from tritium.passes.ttir import PIPELINE, add_ttir_passes, run_ttir_pipeline

from .ttir_pass_helpers import count, effect_sequence, op_lines

T = "tensor<128x!tt.ptr<f32>>"

ADD_KERNEL = f"""
func.func public @add_kernel(%x: !tt.ptr<f32> {{tt.divisibility = 16 : i32}}, %y: !tt.ptr<f32>, %o: !tt.ptr<f32>, %n: i32) {{
  %pid = "tt.get_program_id"() {{axis = 0 : i32}} : () -> i32
  %c128 = arith.constant 128 : i32
  %start = arith.muli %pid, %c128 : i32
  %r = "tt.make_range"() {{start = 0 : i32, end = 128 : i32}} : () -> tensor<128xi32>
  %r2 = "tt.make_range"() {{start = 0 : i32, end = 128 : i32}} : () -> tensor<128xi32>
  %s = "tt.splat"(%start) : (i32) -> tensor<128xi32>
  %offs = arith.addi %s, %r : tensor<128xi32>
  %offs2 = arith.addi %s, %r2 : tensor<128xi32>
  %ns = "tt.splat"(%n) : (i32) -> tensor<128xi32>
  %mask = arith.cmpi slt, %offs, %ns : tensor<128xi32>
  %xp = "tt.splat"(%x) : (!tt.ptr<f32>) -> {T}
  %xp2 = "tt.addptr"(%xp, %offs) : ({T}, tensor<128xi32>) -> {T}
  %xv = "tt.load"(%xp2, %mask) {{operandSegmentSizes = array<i32: 1, 1, 0>}} : ({T}, tensor<128xi1>) -> tensor<128xf32>
  %yp = "tt.splat"(%y) : (!tt.ptr<f32>) -> {T}
  %yp2 = "tt.addptr"(%yp, %offs2) : ({T}, tensor<128xi32>) -> {T}
  %yv = "tt.load"(%yp2, %mask) {{operandSegmentSizes = array<i32: 1, 1, 0>}} : ({T}, tensor<128xi1>) -> tensor<128xf32>
  %unused = "tt.load"(%yp2, %mask) {{operandSegmentSizes = array<i32: 1, 1, 0>}} : ({T}, tensor<128xi1>) -> tensor<128xf32>
  %sum = arith.addf %xv, %yv : tensor<128xf32>
  %op = "tt.splat"(%o) : (!tt.ptr<f32>) -> {T}
  %op2 = "tt.addptr"(%op, %offs) : ({T}, tensor<128xi32>) -> {T}
  "tt.store"(%op2, %sum, %mask) {{operandSegmentSizes = array<i32: 1, 1, 1>}} : ({T}, tensor<128xf32>, tensor<128xi1>) -> ()
  return
}}
"""

LOOP_REDUCE_KERNEL = f"""
func.func public @sum_rows(%x: !tt.ptr<f32>, %o: !tt.ptr<f32>, %n: i32) {{
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c128 = arith.constant 128 : i32
  %init = arith.constant dense<0.0> : tensor<128xf32>
  %acc = scf.for %i = %c0 to %n step %c128 iter_args(%a = %init) -> (tensor<128xf32>) : i32 {{
    %base = "tt.splat"(%x) : (!tt.ptr<f32>) -> {T}
    %r = "tt.make_range"() {{start = 0 : i32, end = 128 : i32}} : () -> tensor<128xi32>
    %is = "tt.splat"(%i) : (i32) -> tensor<128xi32>
    %offs = arith.addi %is, %r : tensor<128xi32>
    %p1 = "tt.addptr"(%base, %r) : ({T}, tensor<128xi32>) -> {T}
    %p2 = "tt.addptr"(%p1, %is) : ({T}, tensor<128xi32>) -> {T}
    %ns = "tt.splat"(%n) : (i32) -> tensor<128xi32>
    %m = arith.cmpi slt, %offs, %ns : tensor<128xi32>
    %v = "tt.load"(%p2, %m, %init) {{operandSegmentSizes = array<i32: 1, 1, 1>}} : ({T}, tensor<128xi1>, tensor<128xf32>) -> tensor<128xf32>
    "tt.print"(%i) {{prefix = "i", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>}} : (i32) -> ()
    %a2 = arith.addf %a, %v : tensor<128xf32>
    scf.yield %a2 : tensor<128xf32>
  }}
  %tot = "tt.reduce"(%acc) {{axis = 0 : i32, combine = @add_f32, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>}} : (tensor<128xf32>) -> f32
  %t = arith.constant true
  "tt.assert"(%t) {{message = "ok"}} : (i1) -> ()
  "tt.store"(%o, %tot) {{operandSegmentSizes = array<i32: 1, 1, 0>}} : (!tt.ptr<f32>, f32) -> ()
  %old = "tt.atomic_rmw"(%o, %tot) {{atomic_rmw_op = 5 : i32, sem = 4 : i32, scope = 1 : i32}} : (!tt.ptr<f32>, f32) -> f32
  "tt.store"(%o, %tot) {{operandSegmentSizes = array<i32: 1, 1, 0>}} : (!tt.ptr<f32>, f32) -> ()
  return
}}
func.func private @add_f32(%a: f32, %b: f32) -> f32 {{
  %s = arith.addf %a, %b : f32
  return %s : f32
}}
func.func private @unused_helper(%a: f32) -> f32 {{
  return %a : f32
}}
"""


def _run(src, **kw) -> str:
    with make_context(), ir.Location.unknown():
        m = ir.Module.parse(src)
        before = effect_sequence(str(m))
        run_ttir_pipeline(m, **kw)
        text = str(m)
        # verifiable and round-trippable
        tt.verify_module(m)
        again = ir.Module.parse(text)
        tt.verify_module(again)
        assert str(again) == text
        return before, text


def test_add_kernel():
    before, out = _run(ADD_KERNEL)
    assert count(out, "tt.make_range") == 1
    assert count(out, "tt.load") == 2  # the unused load is gone
    assert effect_sequence(out) == ["tt.load", "tt.load", "tt.store"]
    assert count(out, "arith.addi") == 1  # CSE after make_range CSE
    assert "tt.divisibility = 16 : i32" in out


def test_loop_reduce_kernel_keeps_effects_and_combine_function():
    before, out = _run(LOOP_REDUCE_KERNEL)
    assert effect_sequence(out) == before
    assert "@add_f32" in out and "combine = @add_f32" in out
    assert "@unused_helper" not in out  # symbol-dce
    # loop invariants left the loop: the base splat, the range, the splat of n
    loop = out.index("scf.for")
    for needle in ('"tt.splat"(%arg0)', '"tt.make_range"', '"tt.splat"(%arg2)'):
        assert out.index(needle) < loop, needle
    # addptr(addptr(base, r), is) was combined into one addptr
    assert count(out, "tt.addptr") == 1


def test_effects_never_reordered_or_removed():
    src = f"""
func.func public @k(%p: !tt.ptr<f32>, %n: i32) {{
  %base = "tt.splat"(%p) : (!tt.ptr<f32>) -> {T}
  %a = "tt.load"(%base) {{operandSegmentSizes = array<i32: 1, 0, 0>}} : ({T}) -> tensor<128xf32>
  "tt.print"(%a) {{prefix = "a", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>}} : (tensor<128xf32>) -> ()
  "tt.store"(%base, %a) {{operandSegmentSizes = array<i32: 1, 1, 0>}} : ({T}, tensor<128xf32>) -> ()
  %b = "tt.load"(%base) {{operandSegmentSizes = array<i32: 1, 0, 0>}} : ({T}) -> tensor<128xf32>
  %c1 = arith.constant 1 : i32
  %cmp = arith.cmpi sgt, %n, %c1 : i32
  "tt.assert"(%cmp) {{message = "n > 1"}} : (i1) -> ()
  "tt.store"(%base, %b) {{operandSegmentSizes = array<i32: 1, 1, 0>}} : ({T}, tensor<128xf32>) -> ()
  %c = "tt.load"(%base) {{operandSegmentSizes = array<i32: 1, 0, 0>}} : ({T}) -> tensor<128xf32>
  "tt.print"(%c) {{prefix = "c", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>}} : (tensor<128xf32>) -> ()
  return
}}
"""
    before, out = _run(src)
    assert effect_sequence(out) == before
    assert 'prefix = "a"}' in out and 'prefix = "c"}' in out


def test_print_ir_after_all_and_timing(capfd):
    _run(ADD_KERNEL, print_ir_after_all=True, timing=True)
    err = capfd.readouterr().err
    for name, _ in PIPELINE:
        assert name in err, name
    assert "IR Dump After tritium-combine" in err


def test_add_ttir_passes_composes():
    from mlir import passmanager

    with make_context(), ir.Location.unknown():
        m = ir.Module.parse(ADD_KERNEL)
        pm = passmanager.PassManager("builtin.module")
        add_ttir_passes(pm)
        text = str(pm)
        assert "tritium-combine" in text and "symbol-dce" in text
        pm.run(m.operation)
        tt.verify_module(m)


def test_invalid_result_raises():
    src = """
func.func public @k(%n: i32) {
  %r = "tt.make_range"() {start = 4 : i32, end = 0 : i32} : () -> tensor<4xi32>
  "tt.print"(%r) {prefix = "", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4xi32>) -> ()
  return
}
"""
    with make_context(), ir.Location.unknown():
        m = ir.Module.parse(src)
        with pytest.raises(tt.VerificationError):
            run_ttir_pipeline(m)


def test_runs_without_an_entered_context():
    # the passes create types and attributes: they must enter the module's context themselves
    from mlir import passmanager

    ctx = make_context()
    m = ir.Module.parse(ADD_KERNEL.replace("%unused", "%unused0"), context=ctx)
    pm = passmanager.PassManager("builtin.module", context=ctx)
    add_ttir_passes(pm)
    pm.run(m.operation)
    src = """
func.func public @k(%n: i32) {
  %s = "tt.splat"(%n) : (i32) -> tensor<4xi32>
  %e = "tt.expand_dims"(%s) {axis = 0 : i32} : (tensor<4xi32>) -> tensor<1x4xi32>
  %b = "tt.broadcast"(%e) : (tensor<1x4xi32>) -> tensor<2x4xi32>
  %c = arith.constant dense<1> : tensor<2x4xi32>
  %x = arith.addi %b, %c : tensor<2x4xi32>
  "tt.print"(%x) {prefix = "", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<2x4xi32>) -> ()
  return
}
"""
    m2 = ir.Module.parse(src, context=ctx)
    run_ttir_pipeline(m2)
    out = str(m2)
    assert "arith.addi %arg0, %c1_i32 : i32" in out and '"tt.splat"' in out
