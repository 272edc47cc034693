from tritium.passes.ttir import combine_pass

from .ttir_pass_helpers import count, effect_sequence, func, op_lines, run_pass

T = "tensor<128x!tt.ptr<f32>>"
LOAD = '"tt.load"({args}) {{operandSegmentSizes = array<i32: {seg}>}} : ({types}) -> tensor<128xf32>'


def _store(ptr: str, val: str, mask: str | None = None) -> str:
    if mask is None:
        return (f'"tt.store"({ptr}, {val}) {{operandSegmentSizes = array<i32: 1, 1, 0>}} : '
                f'({T}, tensor<128xf32>) -> ()')
    return (f'"tt.store"({ptr}, {val}, {mask}) {{operandSegmentSizes = array<i32: 1, 1, 1>}} : '
            f'({T}, tensor<128xf32>, tensor<128xi1>) -> ()')


PRELUDE = f"""
  %base = "tt.splat"(%p) : (!tt.ptr<f32>) -> {T}
  %r = "tt.make_range"() {{start = 0 : i32, end = 128 : i32}} : () -> tensor<128xi32>"""


def test_addptr_addptr():
    src = func(PRELUDE + f"""
  %s = "tt.splat"(%n) : (i32) -> tensor<128xi32>
  %a = "tt.addptr"(%base, %r) : ({T}, tensor<128xi32>) -> {T}
  %b = "tt.addptr"(%a, %s) : ({T}, tensor<128xi32>) -> {T}
  %x = {LOAD.format(args="%b", seg="1, 0, 0", types=T)}
  {_store("%b", "%x")}
  return""")
    out = run_pass(combine_pass, src)
    assert count(out, "tt.addptr") == 1
    assert count(out, "arith.addi") == 1
    (line,) = op_lines(out, "tt.addptr")
    assert '"tt.addptr"(%0, ' in line  # straight off the base splat


def test_addptr_different_offset_types_untouched():
    src = func(PRELUDE + f"""
  %s = "tt.splat"(%m) : (i64) -> tensor<128xi64>
  %a = "tt.addptr"(%base, %r) : ({T}, tensor<128xi32>) -> {T}
  %b = "tt.addptr"(%a, %s) : ({T}, tensor<128xi64>) -> {T}
  %x = {LOAD.format(args="%b", seg="1, 0, 0", types=T)}
  {_store("%b", "%x")}
  return""", args="%p: !tt.ptr<f32>, %n: i32, %m: i64")
    out = run_pass(combine_pass, src)
    assert count(out, "tt.addptr") == 2


def test_addptr_zero():
    src = func(PRELUDE + f"""
  %z = arith.constant 0 : i32
  %zs = "tt.splat"(%z) : (i32) -> tensor<128xi32>
  %zd = arith.constant dense<0> : tensor<128xi32>
  %a = "tt.addptr"(%base, %zs) : ({T}, tensor<128xi32>) -> {T}
  %b = "tt.addptr"(%a, %zd) : ({T}, tensor<128xi32>) -> {T}
  %q = "tt.addptr"(%p, %z) : (!tt.ptr<f32>, i32) -> !tt.ptr<f32>
  %x = {LOAD.format(args="%b", seg="1, 0, 0", types=T)}
  {_store("%b", "%x")}
  %y = "tt.load"(%q) {{operandSegmentSizes = array<i32: 1, 0, 0>}} : (!tt.ptr<f32>) -> f32
  "tt.store"(%q, %y) {{operandSegmentSizes = array<i32: 1, 1, 0>}} : (!tt.ptr<f32>, f32) -> ()
  return""")
    out = run_pass(combine_pass, src)
    assert count(out, "tt.addptr") == 0
    assert '"tt.load"(%0)' in out and '"tt.load"(%arg0)' in out


def test_select_of_masked_load():
    src = func(PRELUDE + f"""
  %c = arith.cmpi slt, %n, %n : i32
  %m = "tt.splat"(%c) : (i1) -> tensor<128xi1>
  %other = arith.constant dense<2.0> : tensor<128xf32>
  %ptrs = "tt.addptr"(%base, %r) : ({T}, tensor<128xi32>) -> {T}
  %x = {LOAD.format(args="%ptrs, %m", seg="1, 1, 0", types=T + ", tensor<128xi1>")}
  %y = arith.select %c, %x, %other : tensor<128xf32>
  {_store("%ptrs", "%y")}
  return""")
    out = run_pass(combine_pass, src)
    assert count(out, "arith.select") == 0
    (line,) = op_lines(out, "tt.load")
    assert "array<i32: 1, 1, 1>" in line


def test_broadcast_and_expand_dims_of_splat():
    src = func("""
  %s = "tt.splat"(%n) : (i32) -> tensor<1x4xi32>
  %b = "tt.broadcast"(%s) : (tensor<1x4xi32>) -> tensor<8x4xi32>
  %s1 = "tt.splat"(%n) : (i32) -> tensor<4xi32>
  %e = "tt.expand_dims"(%s1) {axis = 0 : i32} : (tensor<4xi32>) -> tensor<1x4xi32>
  %r = "tt.make_range"() {start = 0 : i32, end = 4 : i32} : () -> tensor<4xi32>
  %er = "tt.expand_dims"(%r) {axis = 0 : i32} : (tensor<4xi32>) -> tensor<1x4xi32>
  %b1 = "tt.broadcast"(%er) : (tensor<1x4xi32>) -> tensor<2x4xi32>
  %b2 = "tt.broadcast"(%b1) : (tensor<2x4xi32>) -> tensor<2x4xi32>
  %er3 = "tt.expand_dims"(%er) {axis = 0 : i32} : (tensor<1x4xi32>) -> tensor<1x1x4xi32>
  %b3 = "tt.broadcast"(%er3) : (tensor<1x1x4xi32>) -> tensor<1x8x4xi32>
  %b4 = "tt.broadcast"(%b3) : (tensor<1x8x4xi32>) -> tensor<3x8x4xi32>
  "tt.print"(%b) {prefix = "", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<8x4xi32>) -> ()
  "tt.print"(%e) {prefix = "", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<1x4xi32>) -> ()
  "tt.print"(%b2) {prefix = "", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<2x4xi32>) -> ()
  "tt.print"(%b4) {prefix = "", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<3x8x4xi32>) -> ()
  return""")
    out = run_pass(combine_pass, src)
    splats = op_lines(out, "tt.splat")
    assert any("-> tensor<8x4xi32>" in s for s in splats)
    assert any("-> tensor<1x4xi32>" in s for s in splats)
    bcasts = op_lines(out, "tt.broadcast")
    # broadcast(broadcast(x)) -> broadcast(x); same-type broadcast dropped
    assert len(bcasts) == 2, bcasts
    assert any("(tensor<1x1x4xi32>) -> tensor<3x8x4xi32>" in b for b in bcasts)
    assert count(out, "tt.expand_dims") == 2


def test_splat_and_broadcast_of_constants_become_dense():
    src = func("""
  %c = arith.constant 3 : i32
  %s = "tt.splat"(%c) : (i32) -> tensor<4xi32>
  %d = arith.constant dense<1.5> : tensor<1x4xf32>
  %b = "tt.broadcast"(%d) : (tensor<1x4xf32>) -> tensor<2x4xf32>
  "tt.print"(%s) {prefix = "", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4xi32>) -> ()
  "tt.print"(%b) {prefix = "", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<2x4xf32>) -> ()
  return""")
    out = run_pass(combine_pass, src)
    assert count(out, "tt.splat") == 0 and count(out, "tt.broadcast") == 0
    assert "dense<3> : tensor<4xi32>" in out and "dense<1.500000e+00> : tensor<2x4xf32>" in out


def test_constant_masks():
    src = func(PRELUDE + f"""
  %ptrs = "tt.addptr"(%base, %r) : ({T}, tensor<128xi32>) -> {T}
  %t = arith.constant dense<true> : tensor<128xi1>
  %ct = arith.constant true
  %t2 = "tt.splat"(%ct) : (i1) -> tensor<128xi1>
  %f = arith.constant dense<false> : tensor<128xi1>
  %other = arith.constant dense<7.0> : tensor<128xf32>
  %a = {LOAD.format(args="%ptrs, %t, %other", seg="1, 1, 1", types=T + ", tensor<128xi1>, tensor<128xf32>")}
  %b = {LOAD.format(args="%ptrs, %f, %other", seg="1, 1, 1", types=T + ", tensor<128xi1>, tensor<128xf32>")}
  %c = {LOAD.format(args="%ptrs, %f", seg="1, 1, 0", types=T + ", tensor<128xi1>")}
  {_store("%ptrs", "%a", "%t2")}
  {_store("%ptrs", "%b", "%f")}
  {_store("%ptrs", "%c")}
  return""")
    out = run_pass(combine_pass, src)
    loads = op_lines(out, "tt.load")
    assert len(loads) == 1 and "array<i32: 1, 0, 0>" in loads[0]
    stores = op_lines(out, "tt.store")
    assert len(stores) == 2 and all("array<i32: 1, 1, 0>" in s for s in stores)
    assert "dense<0.000000e+00> : tensor<128xf32>" in out  # the maskless-other false load became zeros
    assert effect_sequence(out) == ["tt.load", "tt.store", "tt.store"]


def _dot_src(add: str, acc: str = "dense<0.0>", extra_use: bool = False) -> str:
    use = '\n  "tt.print"(%dot) {prefix = "", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<16x16xf32>) -> ()' if extra_use else ""
    return func(f"""
  %zero = arith.constant {acc} : tensor<16x16xf32>
  %dot = "tt.dot"(%a, %b, %zero) {{inputPrecision = 0 : i32, maxNumImpreciseAcc = 0 : i32}} : (tensor<16x16xf16>, tensor<16x16xf16>, tensor<16x16xf32>) -> tensor<16x16xf32>
  %sum = {add} : tensor<16x16xf32>{use}
  "tt.print"(%sum) {{prefix = "", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>}} : (tensor<16x16xf32>) -> ()
  return""", args="%a: tensor<16x16xf16>, %b: tensor<16x16xf16>, %d: tensor<16x16xf32>")


def test_dot_plus_acc():
    for add in ("arith.addf %dot, %d", "arith.addf %d, %dot"):
        out = run_pass(combine_pass, _dot_src(add))
        assert count(out, "arith.addf") == 0
        (line,) = op_lines(out, "tt.dot")
        assert '"tt.dot"(%arg0, %arg1, %arg2)' in line and "inputPrecision = 0" in line


def test_dot_plus_acc_conditions():
    # the dot has another use / a non-zero accumulator / -0.0: untouched
    for src in (_dot_src("arith.addf %dot, %d", extra_use=True), _dot_src("arith.addf %dot, %d", acc="dense<1.0>"),
                _dot_src("arith.addf %dot, %d", acc="dense<-0.0>")):
        out = run_pass(combine_pass, src)
        assert count(out, "arith.addf") == 1
