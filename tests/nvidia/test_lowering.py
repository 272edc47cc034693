"""The CUDA lowering: its rule table over the generic one, its TargetInfo, and rules run on decoded operands."""
import pytest

pytest.importorskip("mlir")

from mlir import ir  # noqa: E402

from tritium.dialects import make_context  # noqa: E402
from tritium.lowering import GENERIC_RULES, LoweringError, lower_module  # noqa: E402


def test_cuda_table_is_the_generic_one_with_its_own_rules():
    from tritium_nvidia.lowering import CUDA_RULES

    assert set(GENERIC_RULES) <= set(CUDA_RULES)
    for op in ("tt.load", "tt.store", "tt.atomic_rmw", "tt.atomic_cas", "tt.extern_elementwise", "math.exp"):
        assert op in CUDA_RULES and op not in GENERIC_RULES, op
    for op in ("arith.addi", "tt.elementwise_inline_asm"):  # target-independent (the asm text is the user's)
        assert CUDA_RULES[op] is GENERIC_RULES[op], op
    # the backend's rule wins over the generic one (conversions: cvt; f32 division: div.full)
    for op in ("arith.divf", "arith.extf", "tt.fp_to_fp"):
        assert CUDA_RULES[op] is not GENERIC_RULES[op], op
    # fp8 arithmetic is the generic rule's (in f32, through the target's fp8 conversions)
    for op in ("arith.addf", "arith.cmpf"):
        assert CUDA_RULES[op] is GENERIC_RULES[op], op


def test_cuda_target_info_is_complete():
    from tritium_nvidia.lowering import CUDATargetInfo

    t = CUDATargetInfo(80)
    assert t.name == "cuda" and t.arch == 80 and t.warp_size == 32


def _lower(text):
    from tritium_nvidia.lowering import CUDA_RULES, CUDATargetInfo

    with make_context():
        out = lower_module(ir.Module.parse(text), CUDATargetInfo(), CUDA_RULES)
        return str(out.module)


def test_load_modifiers_from_decoded_params():
    text = '''
    module attributes {"ttg.num-warps" = 4 : i32} {
      func.func public @k(%p: !tt.ptr<f32>, %m: i1, %o: f32) {
        %a = "tt.load"(%p, %m, %o) {operandSegmentSizes = array<i32: 1, 1, 1>, cache = 3 : i32, evict = 3 : i32}
            : (!tt.ptr<f32>, i1, f32) -> f32
        "tt.store"(%p, %a) {operandSegmentSizes = array<i32: 1, 1, 0>, cache = 5 : i32}
            : (!tt.ptr<f32>, f32) -> ()
        return
      }
    }'''
    llvm = _lower(text)
    assert "@$2 ld.global.cg.L1::evict_last.b32 $0, [ $1 + 0 ];" in llvm
    assert "mov.b32 $0, $3;" in llvm  # the other value
    assert "st.global.cs.b32 [ $0 + 0 ], $1;" in llvm


def test_atomic_from_decoded_enums():
    text = '''
    module attributes {"ttg.num-warps" = 4 : i32} {
      func.func public @k(%p: !tt.ptr<i32>, %v: i32) {
        %r = "tt.atomic_rmw"(%p, %v) {atomic_rmw_op = 9 : i32, sem = 1 : i32, scope = 3 : i32}
            : (!tt.ptr<i32>, i32) -> i32
        return
      }
    }'''
    assert "atom.global.sys.relaxed.min.u32" in _lower(text)


def test_block_pointer_load_is_refused():
    text = '''
    module attributes {"ttg.num-warps" = 4 : i32} {
      func.func public @k(%p: !tt.ptr<tensor<16xf32>>) {
        %a = "tt.load"(%p) {operandSegmentSizes = array<i32: 1, 0, 0>} : (!tt.ptr<tensor<16xf32>>) -> tensor<16xf32>
        return
      }
    }'''
    with pytest.raises(LoweringError, match="block pointers"):
        _lower(text)
