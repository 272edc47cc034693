"""The lowering framework: rule tables, the walker's decoding of operands and attributes, its errors, and
what a TargetInfo must provide."""
import pytest

pytest.importorskip("mlir")

from mlir import ir  # noqa: E402

from tritium.dialects import make_context  # noqa: E402
from tritium.dialects.enums import CacheModifier, EvictionPolicy, MemSemantic, MemSyncScope, RMWOp  # noqa: E402
from tritium.errors import TritiumError  # noqa: E402
from tritium.lowering import GENERIC_RULES, LoweringError, Rules, TargetInfo, lower_module, merge  # noqa: E402

BLOCKED = "#ttg.blocked<array<i32: 1>, array<i32: 32>, array<i32: 4>, array<i32: 0>>"


class FakeTarget(TargetInfo):
    """Enough of a target for rules that ask it nothing but the thread id."""

    name = "fake"

    def thread_id(self, ctx):
        return ctx.c32(0)

    def program_id(self, ctx, axis):
        return ctx.c32(axis)

    def num_programs(self, ctx, axis):
        return ctx.c32(1)

    def shuffle_xor(self, ctx, value, mask):
        return value

    def shuffle_idx(self, ctx, value, src_lane):
        return value

    def barrier(self, ctx):
        pass

    def printf(self, ctx, fmt, args):
        pass

    def assert_fail(self, ctx, message, file, line, function):
        pass


def _lower(text, rules):
    ctx = make_context()
    ctx.allow_unregistered_dialects = True
    with ctx:
        return lower_module(ir.Module.parse(text), FakeTarget(), rules, conversions=False)


def _spy(seen, name, result=None):
    """A rule recording what it was called with; returns ``result(ctx)`` per result (or nothing)."""

    def rule(ctx, *operands, **params):
        seen[name] = (ctx.op.name, operands, params)
        return [result(ctx) for _ in ctx.op.results] if result else []

    return rule


# ------------------------------------------------------------------ tables
def test_register_fills_the_table_and_refuses_a_second_rule():
    rules = Rules()

    @rules.register("test.a", "test.b")
    def rule_a(ctx):
        return []

    assert rules == {"test.a": rule_a, "test.b": rule_a}
    with pytest.raises(LoweringError, match=r"two lowering rules for 'test.a': .*rule_a and .*rule_c"):
        @rules.register("test.a")
        def rule_c(ctx):
            return []


def test_merge_refuses_an_op_defined_twice():
    a, b = Rules(), Rules()
    a.add("test.x", lambda ctx: [])
    b.add("test.y", lambda ctx: [])
    assert set(merge(a, b)) == {"test.x", "test.y"}
    b.add("test.x", lambda ctx: [])
    with pytest.raises(LoweringError, match="two lowering rules for 'test.x'"):
        merge(a, b)


def test_generic_table_has_every_family():
    for op in ("arith.addf", "arith.constant", "tt.get_program_id", "tt.splat", "tt.trans", "ttg.convert_layout",
               "tt.reduce", "tt.scan", "tt.histogram", "tt.gather", "scf.for", "func.call", "tt.print"):
        assert op in GENERIC_RULES, op
    # memory accesses are the backends' business
    assert "tt.load" not in GENERIC_RULES and "tt.store" not in GENERIC_RULES


# ------------------------------------------------------------------ errors
def test_missing_rule_names_op_and_location():
    text = '''
    module attributes {"ttg.num-warps" = 4 : i32} {
      func.func public @k(%a: f32) {
        %0 = math.absf %a : f32 loc("mykernel.py":12:3)
        %1 = "test.unknown"(%0) : (f32) -> f32 loc("mykernel.py":13:5)
        return
      }
    }'''
    with pytest.raises(LoweringError, match=r"no lowering rule for 'test.unknown' \(target 'fake'\) at "
                                            r"\"mykernel.py\":13:5"):
        _lower(text, GENERIC_RULES)


def test_failing_rule_names_op_and_location():
    text = '''
    module attributes {"ttg.num-warps" = 4 : i32} {
      func.func public @k(%a: f32) {
        %0 = math.absf %a : f32 loc("mykernel.py":7:9)
        return
      }
    }'''

    def broken(ctx, x, **params):
        raise KeyError("oops")

    with pytest.raises(LoweringError, match=r"lowering 'math.absf' at \"mykernel.py\":7:9 failed: KeyError"):
        _lower(text, {**GENERIC_RULES, "math.absf": broken})


def test_bad_attribute_names_op_and_location():
    text = '''
    module attributes {"ttg.num-warps" = 4 : i32} {
      func.func public @k(%p: !tt.ptr<f32>) {
        %a = "tt.load"(%p) {operandSegmentSizes = array<i32: 1, 0, 0>, cache = 9 : i32}
            : (!tt.ptr<f32>) -> f32 loc("mykernel.py":3:4)
        return
      }
    }'''
    with pytest.raises(TritiumError, match=r"'tt.load' at \"mykernel.py\":3:4: attribute cache = 9 : i32 is not "
                                           r"a CacheModifier"):
        _lower(text, {**GENERIC_RULES, "tt.load": lambda ctx, *a, **k: [[ctx.c32(0)]]})


def test_target_info_declares_what_rules_use():
    class Partial(TargetInfo):
        def thread_id(self, ctx):
            return None

    with pytest.raises(TypeError, match="abstract"):
        Partial()
    FakeTarget()


# ------------------------------------------------------------------ decoded operands and params
LOADS = f'''
#A = {BLOCKED}
module attributes {{"ttg.num-warps" = 4 : i32, "ttg.threads-per-warp" = 32 : i32}} {{
  func.func public @k(%p: !tt.ptr<f32>, %m: i1, %o: f32, %t: tensor<128x!tt.ptr<f32>, #A>) {{
    %a = "tt.load"(%p) {{operandSegmentSizes = array<i32: 1, 0, 0>}} : (!tt.ptr<f32>) -> f32
    %b = "tt.load"(%p, %m) {{operandSegmentSizes = array<i32: 1, 1, 0>, cache = 3 : i32, evict = 2 : i32,
                            isVolatile = true}} : (!tt.ptr<f32>, i1) -> f32
    %c = "tt.load"(%p, %m, %o) {{operandSegmentSizes = array<i32: 1, 1, 1>}} : (!tt.ptr<f32>, i1, f32) -> f32
    %d = "tt.load"(%t) {{operandSegmentSizes = array<i32: 1, 0, 0>, allocation.offset = 0 : i32}}
        : (tensor<128x!tt.ptr<f32>, #A>) -> tensor<128xf32, #A>
    return
  }}
}}'''


def test_load_operand_groups_and_params():
    calls = []

    def load(ctx, ptr, mask, other, **params):
        calls.append((ptr, mask, other, params))
        return [[ctx.const(ir.F32Type.get(), 0.0)] * ctx.nregs(ctx.op.results[0].type)]

    _lower(LOADS, {**GENERIC_RULES, "tt.load": load})
    (p0, m0, o0, k0), (p1, m1, o1, k1), (p2, m2, o2, k2), (p3, m3, o3, k3) = calls
    # SINGLE -> the value's per-register list, OPTIONAL -> the list or None
    assert len(p0) == 1 and m0 is None and o0 is None and k0 == {}
    assert len(m1) == 1 and o1 is None
    assert len(m2) == 1 and len(o2) == 1
    # a tensor of 128 elements over 128 threads: one register; allocation.offset is not a param
    assert len(p3) == 1 and k3 == {}
    # attributes as enums and Python values
    assert k1 == {"cache": CacheModifier.CG, "evict": EvictionPolicy.EVICT_FIRST, "isVolatile": True}
    assert type(k1["cache"]) is CacheModifier and type(k1["isVolatile"]) is bool


def test_mixed_groups_atomics_and_upstream_ops():
    text = f'''
    #A = {BLOCKED}
    module attributes {{"ttg.num-warps" = 4 : i32, "ttg.threads-per-warp" = 32 : i32}} {{
      func.func private @add(%x: f32, %y: f32) -> f32 {{
        %s = arith.addf %x, %y : f32
        return %s : f32
      }}
      func.func public @k(%p: !tt.ptr<i32>, %v: i32, %a: f32, %b: f32) {{
        %r = "tt.atomic_rmw"(%p, %v) {{atomic_rmw_op = 6 : i32, sem = 2 : i32, scope = 2 : i32}}
            : (!tt.ptr<i32>, i32) -> i32
        %c = arith.cmpf olt, %a, %b : f32
        %t = "tt.splat"(%a) : (f32) -> tensor<128xf32, #A>
        %u = "tt.splat"(%b) : (f32) -> tensor<128xf32, #A>
        %s:2 = "tt.reduce"(%t, %u) {{axis = 0 : i32, combine = @add,
            operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0>,
            resultSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0>}} : (tensor<128xf32, #A>, tensor<128xf32, #A>)
            -> (f32, f32)
        return
      }}
    }}'''
    seen = {}

    def zero(ctx):
        return [ctx.const(ir.IntegerType.get_signless(32), 0)]

    rules = {**GENERIC_RULES, "tt.atomic_rmw": _spy(seen, "rmw", zero), "arith.cmpf": _spy(seen, "cmpf", zero),
             "tt.reduce": _spy(seen, "reduce", lambda ctx: [ctx.const(ir.F32Type.get(), 0.0)])}
    _lower(text, rules)
    _, (ptr, val, mask), params = seen["rmw"]
    assert len(ptr) == 1 and len(val) == 1 and mask is None
    assert params == {"atomic_rmw_op": RMWOp.MAX, "sem": MemSemantic.ACQUIRE, "scope": MemSyncScope.CTA}
    # upstream ops: one entry per operand; enumerated attributes of their own stay ints
    _, operands, params = seen["cmpf"]
    assert len(operands) == 2 and params["predicate"] == 4
    # a MIXED group is one list of per-operand lists; symbol references are names
    _, (srcs,), params = seen["reduce"]
    assert len(srcs) == 2 and all(len(s) == 1 for s in srcs)
    assert params == {"axis": 0, "combine": "add"}
