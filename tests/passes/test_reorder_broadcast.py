from tritium.passes.ttir import reorder_broadcast_pass

from .ttir_pass_helpers import check_pass, func, op_lines


def test_elementwise_of_splats_runs_on_scalars():
    src = func("""
  %a = "tt.splat"(%n) : (i32) -> tensor<128xi32>
  %b = "tt.splat"(%m) : (i32) -> tensor<128xi32>
  %c = arith.constant dense<3> : tensor<128xi32>
  %s = arith.addi %a, %b : tensor<128xi32>
  %t = arith.muli %s, %c : tensor<128xi32>
  %lt = arith.cmpi slt, %t, %b : tensor<128xi32>
  "tt.print"(%lt) {prefix = "", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<128xi1>) -> ()
  return""", args="%n: i32, %m: i32") + """
// the arithmetic runs on the scalars; one splat is left, of the i1 result
// CHECK-NOT:   "tt.splat"
// CHECK:       %[[S:[0-9]+]] = arith.addi %arg0, %arg1 : i32
// CHECK-NEXT:  %[[C:.*]] = arith.constant 3 : i32
// CHECK-NEXT:  %[[T:[0-9]+]] = arith.muli %[[S]], %[[C]] : i32
// CHECK-NEXT:  %[[LT:[0-9]+]] = arith.cmpi slt, %[[T]], %arg1 : i32
// CHECK-NEXT:  %[[B:[0-9]+]] = "tt.splat"(%[[LT]]) : (i1) -> tensor<128xi1>
// CHECK-NEXT:  "tt.print"(%[[B]])
"""
    check_pass(reorder_broadcast_pass, src)


def test_addptr_of_splats():
    src = func("""
  %a = "tt.splat"(%p) : (!tt.ptr<f32>) -> tensor<8x!tt.ptr<f32>>
  %b = "tt.splat"(%n) : (i32) -> tensor<8xi32>
  %c = "tt.addptr"(%a, %b) : (tensor<8x!tt.ptr<f32>>, tensor<8xi32>) -> tensor<8x!tt.ptr<f32>>
  %x = "tt.load"(%c) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<8x!tt.ptr<f32>>) -> tensor<8xf32>
  "tt.print"(%x) {prefix = "", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<8xf32>) -> ()
  return""") + """
// CHECK-LABEL: func.func public @k
// CHECK-NEXT:  %[[P:[0-9]+]] = "tt.addptr"(%arg0, %arg1) : (!tt.ptr<f32>, i32) -> !tt.ptr<f32>
// CHECK-NEXT:  %[[PS:[0-9]+]] = "tt.splat"(%[[P]]) : (!tt.ptr<f32>) -> tensor<8x!tt.ptr<f32>>
// CHECK-NEXT:  "tt.load"(%[[PS]])
// CHECK-NOT:   "tt.addptr"
"""
    check_pass(reorder_broadcast_pass, src)


def test_elementwise_of_broadcasts_runs_on_the_source_shape():
    src = func("""
  %r = "tt.make_range"() {start = 0 : i32, end = 4 : i32} : () -> tensor<4xi32>
  %e = "tt.expand_dims"(%r) {axis = 1 : i32} : (tensor<4xi32>) -> tensor<4x1xi32>
  %b = "tt.broadcast"(%e) : (tensor<4x1xi32>) -> tensor<4x8xi32>
  %f = "tt.expand_dims"(%r) {axis = 1 : i32} : (tensor<4xi32>) -> tensor<4x1xi32>
  %g = arith.muli %f, %f : tensor<4x1xi32>
  %bg = "tt.broadcast"(%g) : (tensor<4x1xi32>) -> tensor<4x8xi32>
  %s = "tt.splat"(%n) : (i32) -> tensor<4x8xi32>
  %c = arith.constant dense<2> : tensor<4x8xi32>
  %x = arith.addi %b, %s : tensor<4x8xi32>
  %y = arith.muli %x, %c : tensor<4x8xi32>
  %z = arith.subi %y, %bg : tensor<4x8xi32>
  "tt.print"(%z) {prefix = "", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4x8xi32>) -> ()
  return""") + """
// every elementwise op runs on 4x1; one broadcast of the result is left
// CHECK-NOT:   "tt.broadcast"
// CHECK:       %[[E:[0-9]+]] = "tt.expand_dims"
// CHECK-NEXT:  %[[F:[0-9]+]] = "tt.expand_dims"
// CHECK-NEXT:  %[[G:[0-9]+]] = arith.muli %[[F]], %[[F]] : tensor<4x1xi32>
// CHECK-NEXT:  %[[S:[0-9]+]] = "tt.splat"(%arg1) : (i32) -> tensor<4x1xi32>
// CHECK-NEXT:  %[[X:[0-9]+]] = arith.addi %[[E]], %[[S]] : tensor<4x1xi32>
// CHECK-NEXT:  %[[C:.*]] = arith.constant dense<2> : tensor<4x1xi32>
// CHECK-NEXT:  %[[Y:[0-9]+]] = arith.muli %[[X]], %[[C]] : tensor<4x1xi32>
// CHECK-NEXT:  %[[Z:[0-9]+]] = arith.subi %[[Y]], %[[G]] : tensor<4x1xi32>
// CHECK-NEXT:  %[[B:[0-9]+]] = "tt.broadcast"(%[[Z]]) : (tensor<4x1xi32>) -> tensor<4x8xi32>
// CHECK-NEXT:  "tt.print"(%[[B]])
"""
    check_pass(reorder_broadcast_pass, src)


def test_mismatched_broadcast_sources_untouched():
    src = func("""
  %r = "tt.make_range"() {start = 0 : i32, end = 4 : i32} : () -> tensor<4xi32>
  %e0 = "tt.expand_dims"(%r) {axis = 0 : i32} : (tensor<4xi32>) -> tensor<1x4xi32>
  %e1 = "tt.expand_dims"(%r) {axis = 1 : i32} : (tensor<4xi32>) -> tensor<4x1xi32>
  %b0 = "tt.broadcast"(%e0) : (tensor<1x4xi32>) -> tensor<4x4xi32>
  %b1 = "tt.broadcast"(%e1) : (tensor<4x1xi32>) -> tensor<4x4xi32>
  %x = arith.addi %b0, %b1 : tensor<4x4xi32>
  "tt.print"(%x) {prefix = "", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4x4xi32>) -> ()
  return""") + """
// CHECK:       "tt.make_range"
// CHECK-NOT:   "tt.broadcast"
// CHECK:       "tt.expand_dims"(%{{[0-9]+}}) {axis = 1 : i32}
// CHECK-NEXT:  %[[B0:[0-9]+]] = "tt.broadcast"(%{{[0-9]+}}) : (tensor<1x4xi32>) -> tensor<4x4xi32>
// CHECK-NEXT:  %[[B1:[0-9]+]] = "tt.broadcast"(%{{[0-9]+}}) : (tensor<4x1xi32>) -> tensor<4x4xi32>
// CHECK-NEXT:  arith.addi %[[B0]], %[[B1]] : tensor<4x4xi32>
// CHECK-NOT:   "tt.broadcast"
"""
    check_pass(reorder_broadcast_pass, src)


def test_expand_dims_of_splat():
    src = func("""
  %s = "tt.splat"(%n) : (i32) -> tensor<4xi32>
  %e = "tt.expand_dims"(%s) {axis = 0 : i32} : (tensor<4xi32>) -> tensor<1x4xi32>
  "tt.print"(%e) {prefix = "", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<1x4xi32>) -> ()
  return""") + """
// CHECK-NOT:   "tt.expand_dims"
// CHECK:       %[[S:[0-9]+]] = "tt.splat"(%arg1) : (i32) -> tensor<1x4xi32>
// CHECK-NEXT:  "tt.print"(%[[S]])
"""
    check_pass(reorder_broadcast_pass, src)


def test_broadcast_with_splat_operand_runs_without_an_entered_location():
    # the splat-like operand's new type is built at the op's location (the frontend runs the pipeline with a
    # context but no default Location: tl.arange(0, 4)[:, None] + tl.zeros([4, 8]) used to fail here)
    from mlir import ir, passmanager

    from tritium.dialects import make_context

    src = func("""
  %r = "tt.make_range"() {start = 0 : i32, end = 4 : i32} : () -> tensor<4xi32>
  %e = "tt.expand_dims"(%r) {axis = 1 : i32} : (tensor<4xi32>) -> tensor<4x1xi32>
  %b = "tt.broadcast"(%e) : (tensor<4x1xi32>) -> tensor<4x8xi32>
  %s = "tt.splat"(%n) : (i32) -> tensor<4x8xi32>
  %x = arith.addi %b, %s : tensor<4x8xi32>
  "tt.print"(%x) {prefix = "", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4x8xi32>) -> ()
  return""")
    with make_context() as ctx:
        m = ir.Module.parse(src)
        pm = passmanager.PassManager("builtin.module", context=ctx)
        pm.add(reorder_broadcast_pass, name="reorder_broadcast")
        pm.run(m.operation)
        out = str(m)
    (line,) = op_lines(out, "arith.addi")
    assert line.endswith(": tensor<4x1xi32>"), line
