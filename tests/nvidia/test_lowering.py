"""The lowering framework: the rule registry and its errors."""
import pytest

pytest.importorskip("mlir")

from tritium.lowering import LoweringError, get_rule, register, registered  # noqa: E402


def test_one_rule_per_op_per_backend():
    @register("test.op_a", backend="testbackend")
    def rule_a(ctx, op):
        return []

    assert get_rule("test.op_a", "testbackend") is rule_a
    with pytest.raises(ValueError, match="already registered"):
        @register("test.op_a", backend="testbackend")
        def rule_b(ctx, op):
            return []
    assert "test.op_a" in registered("testbackend")


def test_backend_rule_overrides_generic():
    import tritium.lowering.rules  # noqa: F401
    import tritium_nvidia.rules  # noqa: F401

    assert get_rule("tt.load", "cuda") is not None
    assert get_rule("arith.addf", "cuda") is get_rule("arith.addf", "*")
    assert get_rule("arith.divf", "cuda") is not get_rule("arith.divf", "*")


def test_missing_rule_names_op_and_location():
    from mlir import ir

    import tritium.lowering.rules  # noqa: F401
    from tritium.dialects import make_context
    from tritium.lowering.driver import lower_module
    from tritium_nvidia.rules import CUDATargetInfo

    text = '''
    module attributes {"ttg.num-warps" = 4 : i32} {
      func.func public @k(%a: f32) {
        %0 = math.acosh %a : f32 loc("mykernel.py":12:3)
        %1 = "test.unknown"(%0) : (f32) -> f32 loc("mykernel.py":13:5)
        return
      }
    }'''
    ctx = make_context()
    ctx.allow_unregistered_dialects = True
    with ctx:
        m = ir.Module.parse(text)
        with pytest.raises(LoweringError, match=r"no lowering rule for 'test.unknown'.*mykernel.py\":13:5"):
            lower_module(m, CUDATargetInfo(), "cuda")
