from tritium.passes.ttir import cse_pass

from .ttir_pass_helpers import check_pass, count, func, run_pass

SPLAT = '"tt.splat"(%p) : (!tt.ptr<f32>) -> tensor<128x!tt.ptr<f32>>'


def test_merges_identical_pure_ops_and_redirects_uses():
    src = func(f"""
  %0 = {SPLAT}
  %1 = {SPLAT}
  %r = "tt.make_range"() {{start = 0 : i32, end = 128 : i32}} : () -> tensor<128xi32>
  %r2 = "tt.make_range"() {{end = 128 : i32, start = 0 : i32}} : () -> tensor<128xi32>
  %a = "tt.addptr"(%0, %r) : (tensor<128x!tt.ptr<f32>>, tensor<128xi32>) -> tensor<128x!tt.ptr<f32>>
  %b = "tt.addptr"(%1, %r2) : (tensor<128x!tt.ptr<f32>>, tensor<128xi32>) -> tensor<128x!tt.ptr<f32>>
  %x = "tt.load"(%a) {{operandSegmentSizes = array<i32: 1, 0, 0>}} : (tensor<128x!tt.ptr<f32>>) -> tensor<128xf32>
  "tt.store"(%b, %x) {{operandSegmentSizes = array<i32: 1, 1, 0>}} : (tensor<128x!tt.ptr<f32>>, tensor<128xf32>) -> ()
  return""") + """
// one splat, range and addptr (attribute order does not matter); the store uses the load's pointer
// CHECK-LABEL: func.func public @k
// CHECK-NEXT:  %[[S:[0-9]+]] = "tt.splat"(%arg0)
// CHECK-NEXT:  %[[R:[0-9]+]] = "tt.make_range"()
// CHECK-NEXT:  %[[P:[0-9]+]] = "tt.addptr"(%[[S]], %[[R]])
// CHECK-NEXT:  %[[X:[0-9]+]] = "tt.load"(%[[P]])
// CHECK-NEXT:  "tt.store"(%[[P]], %[[X]])
// CHECK-NEXT:  return
"""
    check_pass(cse_pass, src)


def test_keeps_ops_that_differ():
    src = func("""
  %r = "tt.make_range"() {start = 0 : i32, end = 128 : i32} : () -> tensor<128xi32>
  %r2 = "tt.make_range"() {start = 128 : i32, end = 256 : i32} : () -> tensor<128xi32>
  %s = "tt.splat"(%n) : (i32) -> tensor<128xi32>
  %s2 = "tt.splat"(%n) : (i32) -> tensor<64xi32>
  %e = "tt.expand_dims"(%r) {axis = 0 : i32} : (tensor<128xi32>) -> tensor<1x128xi32>
  %e2 = "tt.expand_dims"(%r) {axis = 1 : i32} : (tensor<128xi32>) -> tensor<128x1xi32>
  "tt.print"(%r, %r2, %s) {prefix = "", operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>} : (tensor<128xi32>, tensor<128xi32>, tensor<128xi32>) -> ()
  "tt.print"(%s2) {prefix = "", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<64xi32>) -> ()
  "tt.print"(%e) {prefix = "", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<1x128xi32>) -> ()
  "tt.print"(%e2) {prefix = "", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<128x1xi32>) -> ()
  return""")
    out = run_pass(cse_pass, src)
    assert count(out, "tt.make_range") == 2
    assert count(out, "tt.splat") == 2
    assert count(out, "tt.expand_dims") == 2


def test_commutative_operands_are_a_multiset():
    src = func("""
  %a = "tt.splat"(%n) : (i32) -> tensor<8xi32>
  %b = "tt.make_range"() {start = 0 : i32, end = 8 : i32} : () -> tensor<8xi32>
  %0 = "tt.mulhiui"(%a, %b) : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi32>
  %1 = "tt.mulhiui"(%b, %a) : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi32>
  %2 = "tt.precise_divf"(%c, %d) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %3 = "tt.precise_divf"(%d, %c) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  "tt.print"(%0, %1) {prefix = "", operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0>} : (tensor<8xi32>, tensor<8xi32>) -> ()
  "tt.print"(%2, %3) {prefix = "", operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0>} : (tensor<8xf32>, tensor<8xf32>) -> ()
  return""", args="%n: i32, %c: tensor<8xf32>, %d: tensor<8xf32>")
    out = run_pass(cse_pass, src)
    assert count(out, "tt.mulhiui") == 1
    assert count(out, "tt.precise_divf") == 2  # not commutative


def test_never_merges_loads_or_effects():
    src = func(f"""
  %0 = {SPLAT}
  %a = "tt.load"(%0) {{operandSegmentSizes = array<i32: 1, 0, 0>}} : (tensor<128x!tt.ptr<f32>>) -> tensor<128xf32>
  "tt.store"(%0, %a) {{operandSegmentSizes = array<i32: 1, 1, 0>}} : (tensor<128x!tt.ptr<f32>>, tensor<128xf32>) -> ()
  %b = "tt.load"(%0) {{operandSegmentSizes = array<i32: 1, 0, 0>}} : (tensor<128x!tt.ptr<f32>>) -> tensor<128xf32>
  "tt.store"(%0, %b) {{operandSegmentSizes = array<i32: 1, 1, 0>}} : (tensor<128x!tt.ptr<f32>>, tensor<128xf32>) -> ()
  "tt.print"(%n) {{prefix = "x", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>}} : (i32) -> ()
  "tt.print"(%n) {{prefix = "x", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>}} : (i32) -> ()
  return""")
    out = run_pass(cse_pass, src)
    assert count(out, "tt.load") == 2 and count(out, "tt.store") == 2 and count(out, "tt.print") == 2


def test_dominance_scopes():
    # an op before the loop dominates the loop body: the body's copy goes; copies in the two branches of an
    # scf.if do not dominate each other, nor the op after the if.
    src = func(f"""
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %cond = arith.cmpi slt, %n, %c1 : i32
  %0 = {SPLAT}
  scf.for %i = %c0 to %n step %c1 : i32 {{
    %1 = {SPLAT}
    "tt.print"(%1) {{prefix = "a", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>}} : (tensor<128x!tt.ptr<f32>>) -> ()
  }}
  scf.if %cond {{
    %2 = "tt.splat"(%n) : (i32) -> tensor<4xi32>
    "tt.print"(%2) {{prefix = "b", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>}} : (tensor<4xi32>) -> ()
  }} else {{
    %3 = "tt.splat"(%n) : (i32) -> tensor<4xi32>
    "tt.print"(%3) {{prefix = "c", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>}} : (tensor<4xi32>) -> ()
  }}
  %4 = "tt.splat"(%n) : (i32) -> tensor<4xi32>
  "tt.print"(%0) {{prefix = "d", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>}} : (tensor<128x!tt.ptr<f32>>) -> ()
  "tt.print"(%4) {{prefix = "d", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>}} : (tensor<4xi32>) -> ()
  return""") + """
// CHECK:       %[[P:[0-9]+]] = "tt.splat"(%arg0)
// CHECK:       scf.for
// CHECK-NEXT:  "tt.print"(%[[P]]) {{.*}}prefix = "a"
// CHECK:       scf.if
// CHECK-NEXT:  %[[B:[0-9]+]] = "tt.splat"(%arg1)
// CHECK-NEXT:  "tt.print"(%[[B]]) {{.*}}prefix = "b"
// CHECK:       else
// CHECK-NEXT:  %[[C:[0-9]+]] = "tt.splat"(%arg1)
// CHECK-NEXT:  "tt.print"(%[[C]]) {{.*}}prefix = "c"
// CHECK:       %[[D:[0-9]+]] = "tt.splat"(%arg1)
// CHECK-NEXT:  "tt.print"(%[[P]]) {{.*}}prefix = "d"
// CHECK-NEXT:  "tt.print"(%[[D]]) {{.*}}prefix = "d"
"""
    out = check_pass(cse_pass, src)
    assert count(out, "tt.splat") == 4  # 1 pointer splat + 3 i32 splats


def test_functions_are_separate_scopes():
    body = f"""
  %0 = {SPLAT}
  "tt.print"(%0) {{prefix = "", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>}} : (tensor<128x!tt.ptr<f32>>) -> ()
  return"""
    src = func(body) + func(body, name="k2")
    out = run_pass(cse_pass, src)
    assert count(out, "tt.splat") == 2


def _loop(update_b: str) -> str:
    pr = '"tt.print"({v}) {{prefix = "", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>}} : (i32) -> ()'
    return func(f"""
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c64 = arith.constant 64 : i32
  %c64b = arith.constant 64 : i32
  %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%a = %c64, %b = %c64b) -> (i32, i32) : i32 {{
    {pr.format(v="%a")}
    {pr.format(v="%b")}
    %a2 = arith.addi %a, %c64 : i32
    %b2 = {update_b}
    scf.yield %a2, %b2 : i32, i32
  }}
  {pr.format(v="%r#0")}
  {pr.format(v="%r#1")}
  return""")


def test_loop_carried_duplicates_merge():
    # two offsets advanced together (K and V of attention after block pointers become pointers): equal inits (two
    # constants of one value), updates equal once a == b is assumed: one value; the prints read it
    out = run_pass(cse_pass, _loop("arith.addi %b, %c64 : i32"))
    assert out.count('"tt.print"(%arg3)') == 2 and out.count('"tt.print"(%0#0)') == 2, out  # %arg2: the iv


def test_loop_carried_values_that_differ_stay_apart():
    # same init, another update (b * 64): not always equal; and b updated from a is a's next value only when ...
    out = run_pass(cse_pass, _loop("arith.muli %b, %c64 : i32"))
    assert '"tt.print"(%arg4)' in out and '"tt.print"(%0#1)' in out, out
    # ... its init agrees: here b2 = a + 64 = a2, so a == b by induction (merged)
    out = run_pass(cse_pass, _loop("arith.addi %a, %c64 : i32"))
    assert '"tt.print"(%arg4)' not in out and '"tt.print"(%0#1)' not in out, out
