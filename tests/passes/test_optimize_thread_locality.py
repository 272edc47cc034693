"""optimize_thread_locality on its own: the module a kernel has where the TTGIR pipeline runs it (after coalesce
and the first layout cleanup), its guards, the neutral elements and the view it picks.  The kernels, the whole
pipeline and what the rewritten TTGIR computes: tests/nvidia/test_optimize_thread_locality.py."""
import pytest
from mlir import ir

from tritium.compiler import ASTSource, compile
from tritium.dialects import layouts, make_context, tt
from tritium.passes.pass_manager import run_passes
from tritium.passes.ttgir.convert_to_ttgir import convert_to_ttgir
from tritium.passes.ttgir.optimize_thread_locality import neutral_attr, optimize_thread_locality, thread_local_view
from tritium.passes.ttgir.pipeline import pipeline
from tritium.passes.ir_helpers import walk

from tests.nvidia import thread_locality_kernels as K

D16 = {"tt.divisibility": 16}


def _before_the_pass(op="sum", block_n=128):
    """The TTGIR module of ``accumulate_reduce`` as the pipeline hands it to the pass."""
    ce = {"BLOCK_M": 32, "BLOCK_N": block_n, "OP": op, "INIT": 0.0}
    ttir = compile(ASTSource(K.accumulate_reduce, {"X": "*fp32", "Y": "*fp32", "N": "i32"}, constexprs=ce,
                             attrs={"X": D16, "Y": D16, "N": D16}), target="cuda:90", until="ttir").asm["ttir"]
    ctx = make_context()
    with ctx, ir.Location.unknown():
        m = ir.Module.parse(ttir)
        convert_to_ttgir(m, num_warps=4, threads_per_warp=32, target="cuda:90")
        names = [n for n, _ in pipeline()]
        run_passes(m, pipeline()[:names.index("tritium-optimize-thread-locality")])
    return ctx, m


def _ops(m, name):
    return [o for o in walk(m.operation) if o.name == name]


def test_runs_after_the_first_cleanup_before_accelerate_matmul():
    names = [n for n, _ in pipeline()]
    i = names.index("tritium-optimize-thread-locality")
    assert names[i - 1] == "tritium-remove-layout-conversions" and names[i + 1] == "tritium-accelerate-matmul"


def test_rewrites_the_reduction_of_the_loop():
    ctx, m = _before_the_pass()
    with ctx:
        assert optimize_thread_locality(m.operation) == 1
        m.operation.verify()
        (loop,) = _ops(m, "scf.for")
        (inner,) = [o for o in _ops(loop, "tt.reduce")]
        assert len(_ops(m, "tt.reduce")) == 2
        # the accumulator is carried in the slice of the view's layout, starting at -0.0
        acc = loop.regions[0].blocks[0].arguments[1]
        assert acc.type == inner.results[0].type and list(ir.RankedTensorType(acc.type).shape) == [32, 32]
        assert "-0.000000e+00" in str(loop.operands[3].owner)
        assert optimize_thread_locality(m.operation) == 0  # nothing left to do


def test_an_accumulator_read_elsewhere_in_the_loop_is_left_alone():
    ctx, m = _before_the_pass()
    with ctx, ir.Location.unknown():
        (loop,) = _ops(m, "scf.for")
        body = loop.regions[0].blocks[0]
        acc = body.arguments[1]
        with ir.InsertionPoint.at_block_begin(body):  # tl.device_print("acc", local) at the top of the loop
            tt.create_op("tt.print", operands=[acc], attributes={
                "prefix": ir.StringAttr.get("acc"), "hex": ir.BoolAttr.get(False),
                "isSigned": ir.DenseI32ArrayAttr.get([0])})
        m.operation.verify()
        assert optimize_thread_locality(m.operation) == 0
        assert len(_ops(m, "tt.reduce")) == 1


def test_neutral_elements():
    with make_context():
        f32, f16, i32, i8 = (ir.F32Type.get(), ir.F16Type.get(), ir.IntegerType.get_signless(32),
                             ir.IntegerType.get_signless(8))
        assert str(neutral_attr("arith.addf", f32)) == "-0.000000e+00 : f32"
        assert str(neutral_attr("arith.maxnumf", f16)) == "0xFC00 : f16"  # -inf
        assert str(neutral_attr("arith.minimumf", f32)) == "0x7F800000 : f32"  # +inf
        assert str(neutral_attr("arith.mulf", f32)) == "1.000000e+00 : f32"
        assert str(neutral_attr("arith.maxsi", i32)) == "-2147483648 : i32"
        assert str(neutral_attr("arith.minsi", i8)) == "127 : i8"
        assert str(neutral_attr("arith.minui", i32)) == "-1 : i32"  # all ones
        assert str(neutral_attr("arith.andi", i8)) == "-1 : i8"
        assert str(neutral_attr("arith.maxui", i32)) == "0 : i32"
        assert neutral_attr("arith.addi", f32) is None and neutral_attr("arith.subf", f32) is None
        assert neutral_attr("arith.ori", ir.IntegerType.get_signless(1)) is None


@pytest.mark.parametrize("shape,spt,tpw,wpc,order,want", [
    # 4 elements a thread along N, no repetition: [M, N/4, 4], reduced along the new last axis
    ((32, 128), (1, 4), (1, 32), (4, 1), (1, 0), ((32, 32, 4), ((1, 1, 4), (1, 32, 1), (4, 1, 1), (2, 1, 0)), 2)),
    # 4 elements and 2 repetitions: still [M, N/4, 4] (S >= R), the repetitions stay in the accumulator
    ((16, 256), (1, 4), (1, 32), (4, 1), (1, 0), ((16, 64, 4), ((1, 1, 4), (1, 32, 1), (4, 1, 1), (2, 1, 0)), 2)),
    # 1 element, 4 repetitions: [M, 4, N/4], reduced along axis 1
    ((32, 512), (1, 1), (1, 32), (1, 4), (1, 0), ((32, 4, 128), ((1, 1, 1), (1, 1, 32), (1, 1, 4), (2, 1, 0)), 1)),
    # one element a thread: nothing to gain
    ((32, 128), (1, 1), (1, 32), (1, 4), (1, 0), None),
])
def test_thread_local_view(shape, spt, tpw, wpc, order, want):
    got = thread_local_view(shape, layouts.BlockedLayout(spt, tpw, wpc, order), len(shape) - 1)
    if want is None:
        assert got is None
        return
    view, lay, red = got
    assert (tuple(view), (lay.size_per_thread, lay.threads_per_warp, lay.warps_per_cta, lay.order), red) == want
