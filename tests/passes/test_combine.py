from tritium.passes.ttir import combine_pass

from .ttir_pass_helpers import check_pass, count, func, run_pass

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
    check_pass(combine_pass, func(PRELUDE + f"""
  %s = "tt.splat"(%n) : (i32) -> tensor<128xi32>
  %a = "tt.addptr"(%base, %r) : ({T}, tensor<128xi32>) -> {T}
  %b = "tt.addptr"(%a, %s) : ({T}, tensor<128xi32>) -> {T}
  %x = {LOAD.format(args="%b", seg="1, 0, 0", types=T)}
  {_store("%b", "%x")}
  return""") + """
// addptr(addptr(p, a), b) -> addptr(p, a + b), straight off the base splat
// CHECK-NOT:   arith.addi
// CHECK:       %[[BASE:[0-9]+]] = "tt.splat"(%arg0)
// CHECK-NOT:   "tt.addptr"
// CHECK:       %[[OFF:[0-9]+]] = arith.addi %{{[0-9]+}}, %{{[0-9]+}} : tensor<128xi32>
// CHECK-NEXT:  %[[P:[0-9]+]] = "tt.addptr"(%[[BASE]], %[[OFF]])
// CHECK-NOT:   "tt.addptr"
// CHECK-NOT:   arith.addi
// CHECK:       "tt.load"(%[[P]])
""")


def test_addptr_different_offset_types_untouched():
    check_pass(combine_pass, func(PRELUDE + f"""
  %s = "tt.splat"(%m) : (i64) -> tensor<128xi64>
  %a = "tt.addptr"(%base, %r) : ({T}, tensor<128xi32>) -> {T}
  %b = "tt.addptr"(%a, %s) : ({T}, tensor<128xi64>) -> {T}
  %x = {LOAD.format(args="%b", seg="1, 0, 0", types=T)}
  {_store("%b", "%x")}
  return""", args="%p: !tt.ptr<f32>, %n: i32, %m: i64") + """
// CHECK:       %[[A:[0-9]+]] = "tt.addptr"(%{{[0-9]+}}, %{{[0-9]+}}) : ({{.*}}, tensor<128xi32>)
// CHECK-NEXT:  "tt.addptr"(%[[A]], %{{[0-9]+}}) : ({{.*}}, tensor<128xi64>)
""")


def test_addptr_zero():
    check_pass(combine_pass, func(PRELUDE + f"""
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
  return""") + """
// adding zero (a splat, a dense constant, a scalar) is no addptr at all
// CHECK-NOT:   "tt.addptr"
// CHECK:       %[[BASE:[0-9]+]] = "tt.splat"(%arg0)
// CHECK-NOT:   "tt.addptr"
// CHECK:       "tt.load"(%[[BASE]])
// CHECK-NOT:   "tt.addptr"
// CHECK:       "tt.load"(%arg0)
// CHECK-NOT:   "tt.addptr"
""")


def test_select_of_masked_load():
    check_pass(combine_pass, func(PRELUDE + f"""
  %c = arith.cmpi slt, %n, %n : i32
  %m = "tt.splat"(%c) : (i1) -> tensor<128xi1>
  %other = arith.constant dense<2.0> : tensor<128xf32>
  %ptrs = "tt.addptr"(%base, %r) : ({T}, tensor<128xi32>) -> {T}
  %x = {LOAD.format(args="%ptrs, %m", seg="1, 1, 0", types=T + ", tensor<128xi1>")}
  %y = arith.select %c, %x, %other : tensor<128xf32>
  {_store("%ptrs", "%y")}
  return""") + """
// select(c, load(p, splat(c)), other) -> load(p, splat(c), other)
// CHECK-NOT:   arith.select
// CHECK:       %[[MASK:[0-9]+]] = "tt.splat"(%{{[0-9]+}}) : (i1) -> tensor<128xi1>
// CHECK:       %[[OTHER:.*]] = arith.constant dense<2.000000e+00> : tensor<128xf32>
// CHECK:       %[[X:[0-9]+]] = "tt.load"(%{{[0-9]+}}, %[[MASK]], %[[OTHER]]) {operandSegmentSizes = array<i32: 1, 1, 1>}
// CHECK-NOT:   arith.select
// CHECK:       "tt.store"(%{{[0-9]+}}, %[[X]])
""")


def test_broadcast_and_expand_dims_of_splat():
    check_pass(combine_pass, func("""
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
  return""") + """
// broadcast / expand_dims of a splat is a splat; broadcast(broadcast(x)) is broadcast(x); a same-type broadcast
// is gone
// CHECK-DAG:   %[[B:[0-9]+]] = "tt.splat"(%arg1) : (i32) -> tensor<8x4xi32>
// CHECK-DAG:   %[[E:[0-9]+]] = "tt.splat"(%arg1) : (i32) -> tensor<1x4xi32>
// CHECK:       %[[ER:[0-9]+]] = "tt.expand_dims"(%{{[0-9]+}}) {axis = 0 : i32} : (tensor<4xi32>) -> tensor<1x4xi32>
// CHECK-NEXT:  %[[B1:[0-9]+]] = "tt.broadcast"(%[[ER]]) : (tensor<1x4xi32>) -> tensor<2x4xi32>
// CHECK-NEXT:  %[[ER3:[0-9]+]] = "tt.expand_dims"(%[[ER]]) {axis = 0 : i32}
// CHECK-NEXT:  %[[B4:[0-9]+]] = "tt.broadcast"(%[[ER3]]) : (tensor<1x1x4xi32>) -> tensor<3x8x4xi32>
// CHECK-NEXT:  "tt.print"(%[[B]])
// CHECK-NEXT:  "tt.print"(%[[E]])
// CHECK-NEXT:  "tt.print"(%[[B1]])
// CHECK-NEXT:  "tt.print"(%[[B4]])
""")


def test_splat_and_broadcast_of_constants_become_dense():
    check_pass(combine_pass, func("""
  %c = arith.constant 3 : i32
  %s = "tt.splat"(%c) : (i32) -> tensor<4xi32>
  %d = arith.constant dense<1.5> : tensor<1x4xf32>
  %b = "tt.broadcast"(%d) : (tensor<1x4xf32>) -> tensor<2x4xf32>
  "tt.print"(%s) {prefix = "", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4xi32>) -> ()
  "tt.print"(%b) {prefix = "", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<2x4xf32>) -> ()
  return""") + """
// CHECK-NOT:   "tt.splat"
// CHECK-NOT:   "tt.broadcast"
// CHECK:       %[[S:.*]] = arith.constant dense<3> : tensor<4xi32>
// CHECK-NEXT:  %[[B:.*]] = arith.constant dense<1.500000e+00> : tensor<2x4xf32>
// CHECK-NEXT:  "tt.print"(%[[S]])
// CHECK-NEXT:  "tt.print"(%[[B]])
""")


def test_constant_masks():
    check_pass(combine_pass, func(PRELUDE + f"""
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
  return""") + """
// an all-true mask is dropped; an all-false load is its other (none: zeros), an all-false store is gone
// CHECK-NOT:   "tt.load"
// CHECK:       %[[P:[0-9]+]] = "tt.addptr"
// CHECK-NEXT:  %[[A:[0-9]+]] = "tt.load"(%[[P]]) {operandSegmentSizes = array<i32: 1, 0, 0>}
// CHECK-NOT:   "tt.load"
// CHECK:       %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : tensor<128xf32>
// CHECK-NOT:   "tt.load"
// CHECK:       "tt.store"(%[[P]], %[[A]]) {operandSegmentSizes = array<i32: 1, 1, 0>}
// CHECK-NEXT:  "tt.store"(%[[P]], %[[ZERO]]) {operandSegmentSizes = array<i32: 1, 1, 0>}
// CHECK-NEXT:  return
""")


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
        check_pass(combine_pass, _dot_src(add) + """
// dot(a, b, 0) + d -> dot(a, b, d)
// CHECK-NOT:   arith.addf
// CHECK:       %[[DOT:[0-9]+]] = "tt.dot"(%arg0, %arg1, %arg2) {inputPrecision = 0 : i32, maxNumImpreciseAcc = 0 : i32}
// CHECK-NOT:   arith.addf
// CHECK:       "tt.print"(%[[DOT]])
""")


def test_dot_plus_acc_conditions():
    # the dot has another use / a non-zero accumulator / -0.0: untouched
    for src in (_dot_src("arith.addf %dot, %d", extra_use=True), _dot_src("arith.addf %dot, %d", acc="dense<1.0>"),
                _dot_src("arith.addf %dot, %d", acc="dense<-0.0>")):
        out = run_pass(combine_pass, src)
        assert count(out, "arith.addf") == 1


def _mul_reduce_src(m=32, k=16, n=32, elem="f32", red_axis=1, op="arith.addf"):
    a, b = f"tensor<{m}x{k}x{elem}>", f"tensor<{k}x{n}x{elem}>"
    ea, eb = f"tensor<{m}x{k}x1x{elem}>", f"tensor<1x{k}x{n}x{elem}>"
    full = f"tensor<{m}x{k}x{n}x{elem}>"
    dims = [m, k, n]
    del dims[red_axis]
    out = f"tensor<{dims[0]}x{dims[1]}x{elem}>"
    return func(f"""
  %ea = "tt.expand_dims"(%a) {{axis = 2 : i32}} : ({a}) -> {ea}
  %eb = "tt.expand_dims"(%b) {{axis = 0 : i32}} : ({b}) -> {eb}
  %ba = "tt.broadcast"(%ea) : ({ea}) -> {full}
  %bb = "tt.broadcast"(%eb) : ({eb}) -> {full}
  %prod = arith.mulf %ba, %bb : {full}
  %s = "tt.reduce"(%prod) {{axis = {red_axis} : i32, combine = @sum,
        operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>,
        resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>}} : ({full}) -> {out}
  return %s : {out}""", args=f"%a: {a}, %b: {b}) -> ({out}", extra=f"""
func.func private @sum(%x: {elem}, %y: {elem}) -> {elem} {{
  %r = {op} %x, %y : {elem}
  return %r : {elem}
}}""")


def test_broadcast_mul_reduce_is_a_dot():
    # tl.sum(a[:, :, None] * b[None, :, :], 1) -> tl.dot(a, b) (tf32, as Triton's CombineBroadcastMulReducePattern)
    check_pass(combine_pass, _mul_reduce_src() + """
// CHECK:       %[[Z:.*]] = arith.constant dense<0.000000e+00> : tensor<32x32xf32>
// CHECK:       %[[D:[0-9]+]] = "tt.dot"(%arg0, %arg1, %[[Z]]) {inputPrecision = 0 : i32, maxNumImpreciseAcc = 0 : i32}
// CHECK-NOT:   "tt.reduce"
// CHECK:       return %[[D]]
""")


def test_broadcast_mul_reduce_conditions():
    # too small for a dot, not f32, another combine op, the other axes: left as a reduction
    for kw in (dict(k=8), dict(m=8), dict(elem="f16"), dict(op="arith.mulf"), dict(red_axis=2)):
        out = run_pass(combine_pass, _mul_reduce_src(**kw))
        assert count(out, "tt.reduce") == 1 and count(out, "tt.dot") == 0, kw


def test_reshape_of_reshape_folds():
    pr = '"tt.print"({v}) {{prefix = "", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>}} : ({t}) -> ()'
    src = func(f"""
  %r = "tt.reshape"(%a) : (tensor<32x64xf16>) -> tensor<1x32x64xf16>
  %f = arith.extf %r : tensor<1x32x64xf16> to tensor<1x32x64xf32>
  %b = "tt.reshape"(%f) : (tensor<1x32x64xf32>) -> tensor<32x64xf32>
  %c = "tt.reshape"(%r) : (tensor<1x32x64xf16>) -> tensor<2048xf16>
  %d = "tt.reshape"(%r) {{allow_reorder = true}} : (tensor<1x32x64xf16>) -> tensor<64x32xf16>
  {pr.format(v="%b", t="tensor<32x64xf32>")}
  {pr.format(v="%c", t="tensor<2048xf16>")}
  {pr.format(v="%d", t="tensor<64x32xf16>")}
  return""", args="%a: tensor<32x64xf16>")
    out = run_pass(combine_pass, src)
    # the cast moves above the reshape and meets the first one: %b is extf(%a); %c is one reshape of %a; %d, which
    # may reorder, keeps its own
    assert "arith.extf %arg0 : tensor<32x64xf16> to tensor<32x64xf32>" in out, out
    assert out.count('"tt.reshape"(%arg0)') == 2 and out.count('"tt.reshape"') == 3, out
