"""The tensor descriptor ops of the tt table (``tt.make_tensor_descriptor``, ``tt.descriptor_load``,
``tt.descriptor_store``) and the ``!tt.tensordesc`` type: accepted forms, decoding, and what verification rejects."""
import pytest
from mlir import ir

from tritium.dialects import enums, make_context, tt
from tritium.errors import VerificationError

DESC = "!tt.tensordesc<tensor<16x32xf16>>"
MAKE = (f'%d = "tt.make_tensor_descriptor"(%p, %m, %n, %s, %one) {{operandSegmentSizes = array<i32: 1, 2, 2>, '
        f'padding = 2 : i32}} : (!tt.ptr<f16>, i32, i32, i64, i64) -> {DESC}')


def _module(body: str) -> str:
    return ("func.func @k(%p: !tt.ptr<f16>, %m: i32, %n: i32, %s: i64, %i: i32, %x: tensor<16x32xf16>) {\n"
            "  %one = arith.constant 1 : i64\n" + body + "\n  return\n}\n")


def _verify(src: str):
    with make_context(), ir.Location.unknown():
        m = ir.Module.parse(src)
        tt.verify_module(m)
        return m


def test_accepted_and_decoded():
    src = _module(MAKE + f'''
  %y = "tt.descriptor_load"(%d, %i, %m) {{cache = 3 : i32}} : ({DESC}, i32, i32) -> tensor<16x32xf16>
  "tt.descriptor_store"(%d, %y, %i, %i) : ({DESC}, tensor<16x32xf16>, i32, i32) -> ()''')
    with make_context(), ir.Location.unknown():
        m = ir.Module.parse(src)
        tt.verify_module(m)
        ops = {o.operation.name: o.operation for o in m.body.operations[0].regions[0].blocks[0].operations}
        base, shape, strides = tt.split_operands(ops["tt.make_tensor_descriptor"])
        assert len(shape) == 2 and len(strides) == 2
        assert tt.decode_attributes(ops["tt.make_tensor_descriptor"]) == {"padding": enums.PaddingOption.PAD_NAN}
        desc, indices = tt.split_operands(ops["tt.descriptor_load"])
        assert tt.is_tensordesc(desc.type) and len(indices) == 2
        assert str(tt.desc_block_type(desc.type)) == "tensor<16x32xf16>"
        assert str(tt.tensordesc_type(tt.desc_block_type(desc.type))) == DESC
        assert tt.decode_attributes(ops["tt.descriptor_load"]) == {"cache": enums.CacheModifier.CG}
        d, src_, idx = tt.split_operands(ops["tt.descriptor_store"])
        assert d == desc and len(idx) == 2
    assert tt.MAKE_TENSOR_DESCRIPTOR == "tt.make_tensor_descriptor" and tt.DESCRIPTOR_LOAD == "tt.descriptor_load"
    assert tt.op_def(tt.DESCRIPTOR_STORE).effects == frozenset({tt.WRITE})
    assert tt.op_def(tt.MAKE_TENSOR_DESCRIPTOR).pure and not tt.op_def(tt.DESCRIPTOR_LOAD).pure
    assert "`tt.descriptor_load`" in tt.reference()


@pytest.mark.parametrize("body,message", [
    (f'%d = "tt.make_tensor_descriptor"(%p, %m, %s, %one) {{operandSegmentSizes = array<i32: 1, 1, 2>}} : '
     f'(!tt.ptr<f16>, i32, i64, i64) -> {DESC}', "one shape and one stride per dimension of the block (2)"),
    ('%d = "tt.make_tensor_descriptor"(%p, %m, %n, %s, %one) {operandSegmentSizes = array<i32: 1, 2, 2>} : '
     '(!tt.ptr<f16>, i32, i32, i64, i64) -> !tt.tensordesc<tensor<16x32xf32>>', "differs from the base's f16"),
    (f'%d = "tt.make_tensor_descriptor"(%p, %m, %n, %s, %s) {{operandSegmentSizes = array<i32: 1, 2, 2>}} : '
     f'(!tt.ptr<f16>, i32, i32, i64, i64) -> !tt.ptr<tensor<16x32xf16>>', "tensordesc"),
    (f'%d = "tt.make_tensor_descriptor"(%p, %s, %n, %s, %one) {{operandSegmentSizes = array<i32: 1, 2, 2>}} : '
     f'(!tt.ptr<f16>, i64, i32, i64, i64) -> {DESC}', "i32"),
    (f'%d = "tt.make_tensor_descriptor"(%p, %m, %n, %s, %one) {{operandSegmentSizes = array<i32: 1, 2, 2>, '
     f'padding = 5 : i32}} : (!tt.ptr<f16>, i32, i32, i64, i64) -> {DESC}', "PaddingOption"),
    (MAKE + f'\n  %y = "tt.descriptor_load"(%d, %i) : ({DESC}, i32) -> tensor<16x32xf16>',
     "one index per dimension of the block (2), got 1"),
    (MAKE + f'\n  %y = "tt.descriptor_load"(%d, %i, %i) : ({DESC}, i32, i32) -> tensor<32x16xf16>',
     "the descriptor's block is tensor<16x32xf16>, not tensor<32x16xf16>"),
    (MAKE + f'\n  %y = "tt.descriptor_load"(%d, %s, %s) : ({DESC}, i64, i64) -> tensor<16x32xf16>', "i32"),
    (MAKE + f'\n  "tt.descriptor_store"(%d, %x, %i) : ({DESC}, tensor<16x32xf16>, i32) -> ()',
     "one index per dimension"),
    ('%x2 = arith.extf %x : tensor<16x32xf16> to tensor<16x32xf32>\n  ' + MAKE +
     f'\n  "tt.descriptor_store"(%d, %x2, %i, %i) : ({DESC}, tensor<16x32xf32>, i32, i32) -> ()',
     "not tensor<16x32xf32>"),
    (f'%y = "tt.descriptor_load"(%p, %i, %i) : (!tt.ptr<f16>, i32, i32) -> tensor<16x32xf16>', "tensordesc"),
])
def test_rejected(body, message):
    with pytest.raises((ir.MLIRError, VerificationError)) as e:
        _verify(_module(body))
    assert message in str(e.value) or message in repr(getattr(e.value, "error_diagnostics", "")), str(e.value)
