"""The tt / ttg op tables: what they generate (IRDL, op name constants, docs), decoding ops by them, and the
verification they drive (IRDL constraints first, then the Python verifiers)."""
import pytest
from mlir import ir

from tritium.dialects import enums, make_context, tt, ttg
from tritium.errors import VerificationError

PTR = "!tt.ptr<f32>"
T = "tensor<128x!tt.ptr<f32>>"
BLOCKED = "#ttg.blocked<array<i32: 1>, array<i32: 32>, array<i32: 4>, array<i32: 0>>"
BLOCKED2 = "#ttg.blocked<array<i32: 4>, array<i32: 32>, array<i32: 1>, array<i32: 0>>"
SHARED = "#ttg.shared<1 : i32, 1 : i32, 1 : i32, array<i32: 0>>"

ALL_OPS = tt.OPS + ttg.OPS


def _module(body: str, args: str = f"%p: {PTR}, %n: i32"):
    return f"func.func @k({args}) {{\n{body}\n  return\n}}\n"


def _verify(src: str) -> None:
    with make_context(), ir.Location.unknown():
        tt.verify_module(ir.Module.parse(src))


def _rejection(src: str) -> str:
    """Why ``src`` is not valid: IRDL's checks fail while parsing, the table's verifiers in verify_module."""
    try:
        _verify(src)
    except (ir.MLIRError, VerificationError) as e:
        return str(e)
    pytest.fail("accepted:\n" + src)


def _first_op(m, name):
    found = []

    def visit(op):
        if op.operation.name == name:
            found.append(op.operation)
        return ir.WalkResult.ADVANCE

    m.operation.walk(visit)
    return found[0]


# ---- the tables --------------------------------------------------------------------------------

@pytest.mark.parametrize("opdef", ALL_OPS, ids=lambda d: d.full_name)
def test_every_op_has_a_name_constant_a_doc_and_a_check(opdef):
    module = tt if opdef.dialect == "tt" else ttg
    assert getattr(module, opdef.name.upper()) == opdef.full_name
    assert opdef.doc and "\n" not in opdef.doc
    constrained = bool(opdef.types) or bool(opdef.required_attrs) or not (opdef.operands or opdef.results)
    assert constrained or opdef.verify is not None, f"{opdef.full_name} has neither IRDL constraints nor a verifier"


def test_name_constants_examples():
    assert tt.LOAD == "tt.load" and tt.ATOMIC_RMW == "tt.atomic_rmw" and tt.GET_PROGRAM_ID == "tt.get_program_id"
    assert ttg.CONVERT_LAYOUT == "ttg.convert_layout" and ttg.LOCAL_ALLOC == "ttg.local_alloc"


def test_attribute_kinds_use_the_enums():
    load = tt.op_def(tt.LOAD)
    assert load.attr_kind("cache") is enums.CacheModifier
    assert load.attr_kind("evict") is enums.EvictionPolicy
    assert load.attr_kind("padding") is enums.PaddingOption
    assert load.attr_kind("isVolatile") is tt.BOOL
    assert tt.op_def(tt.ATOMIC_RMW).attr_kind("atomic_rmw_op") is enums.RMWOp
    assert tt.op_def(tt.DOT).attr_kind("inputPrecision") is enums.InputPrecision
    assert tt.op_def(tt.FP_TO_FP).attr_kind("rounding") is enums.RoundingMode
    assert tt.op_def(tt.REDUCE).required_attrs == ("axis", "combine")
    # every enum the TTIR attributes use by name is the one the table declares
    for opdef in tt.OPS:
        for name in opdef.attrs:
            if name in enums.ATTRIBUTE_ENUMS:
                assert opdef.attr_kind(name) is enums.ATTRIBUTE_ENUMS[name], (opdef.full_name, name)


def test_the_dialects_load_and_irdl_matches_the_table():
    src = tt.irdl_source()
    assert "irdl.operation @get_program_id {\n    %0 = irdl.is i32\n    irdl.results(result: %0)" in src
    # one constraint variable for the pointer and the result of addptr
    assert "irdl.operands(ptr: %0, offset: %1)\n    irdl.results(result: %0)" in src
    assert '"axis" = %' in src[src.index("@get_program_id"):src.index("@get_num_programs")]
    make_context()


def test_reference_lists_every_op():
    ref = tt.reference()
    for opdef in tt.OPS:
        assert f"| `{opdef.full_name}` |" in ref
    assert "cache: CacheModifier?" in ref and "axis: ProgramIDDim |" in ref


# ---- round trip ------------------------------------------------------------------------------------

ROUND_TRIP = _module(f"""
  %pid = "tt.get_program_id"() {{axis = 0 : i32}} : () -> i32
  %np = "tt.get_num_programs"() {{axis = 1 : i32}} : () -> i32
  %r = "tt.make_range"() {{start = 0 : i32, end = 128 : i32}} : () -> tensor<128xi32>
  %base = "tt.splat"(%p) : ({PTR}) -> {T}
  %ptrs = "tt.addptr"(%base, %r) : ({T}, tensor<128xi32>) -> {T}
  %sn = "tt.splat"(%n) : (i32) -> tensor<128xi32>
  %m = arith.cmpi slt, %r, %sn : tensor<128xi32>
  %x = "tt.load"(%ptrs, %m) {{cache = 3 : i32, evict = 2 : i32, isVolatile = false,
        operandSegmentSizes = array<i32: 1, 1, 0>}} : ({T}, tensor<128xi1>) -> tensor<128xf32>
  %y = "tt.precise_sqrt"(%x) : (tensor<128xf32>) -> tensor<128xf32>
  %old = "tt.atomic_rmw"(%ptrs, %y, %m) {{atomic_rmw_op = 5 : i32, sem = 4 : i32, scope = 1 : i32,
        operandSegmentSizes = array<i32: 1, 1, 1>}} : ({T}, tensor<128xf32>, tensor<128xi1>) -> tensor<128xf32>
  %h = "tt.histogram"(%r) {{operandSegmentSizes = array<i32: 1, 0>}} : (tensor<128xi32>) -> tensor<8xi32>
  %s = "tt.reduce"(%y) {{axis = 0 : i32, combine = @add,
        operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>,
        resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>}} : (tensor<128xf32>) -> f32
  "tt.store"(%ptrs, %old, %m) {{cache = 1 : i32, evict = 1 : i32,
        operandSegmentSizes = array<i32: 1, 1, 1>}} : ({T}, tensor<128xf32>, tensor<128xi1>) -> ()""") + """
func.func private @add(%a: f32, %b: f32) -> f32 {
  %c = arith.addf %a, %b : f32
  return %c : f32
}
"""


def test_round_trip_prints_and_parses_the_same():
    with make_context(), ir.Location.unknown():
        m = ir.Module.parse(ROUND_TRIP)
        tt.verify_module(m)
        text = str(m)
        again = ir.Module.parse(text)
        tt.verify_module(again)
        assert str(again) == text
        assert '"tt.load"(%4, %6) {cache = 3 : i32, evict = 2 : i32, isVolatile = false' in text


def test_decode_attributes_and_split_operands():
    with make_context(), ir.Location.unknown():
        m = ir.Module.parse(ROUND_TRIP)
        load = _first_op(m, tt.LOAD)
        assert tt.decode_attributes(load) == {"cache": enums.CacheModifier.CG,
                                              "evict": enums.EvictionPolicy.EVICT_FIRST, "isVolatile": False}
        ptr, mask, other = tt.split_operands(load)
        assert ptr == load.operands[0] and mask == load.operands[1] and other is None
        assert tt.operand_groups(load) == {"ptr": [ptr], "mask": [mask], "other": []}
        rmw = _first_op(m, tt.ATOMIC_RMW)
        assert tt.decode_attributes(rmw) == {"atomic_rmw_op": enums.RMWOp.FADD, "sem": enums.MemSemantic.ACQUIRE_RELEASE,
                                             "scope": enums.MemSyncScope.GPU}
        reduce = _first_op(m, tt.REDUCE)
        assert tt.decode_attributes(reduce) == {"axis": 0, "combine": "add"}
        (srcs,) = tt.split_operands(reduce)
        assert srcs == [reduce.operands[0]]
        assert tt.decode_attributes(_first_op(m, tt.GET_PROGRAM_ID)) == {"axis": enums.ProgramIDDim.X}
        assert tt.decode_attributes(_first_op(m, "arith.cmpi")) == {}


# ---- what verification rejects -------------------------------------------------------------------

@pytest.mark.parametrize("body, message", [
    # IRDL type constraints and required attributes
    ('%0 = "tt.get_program_id"() {axis = 0 : i32} : () -> i64', "expected 'i32' but got 'i64'"),
    ('%0 = "tt.get_num_programs"() : () -> i32', 'attribute "axis" is expected but not provided'),
    ('%0 = "tt.make_range"() {start = 0 : i32, end = 4 : i32} : () -> i32',
     "expected base type 'builtin.tensor' but got 'builtin.integer'"),
    (f'%0 = "tt.addptr"(%p, %n) : ({PTR}, i32) -> !tt.ptr<f16>', "expected '!tt.ptr<f32>' but got '!tt.ptr<f16>'"),
    ('%0 = "tt.reduce"(%n) {axis = 0 : i32, combine = "f", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>,'
     ' resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (i32) -> i32',
     "expected base attribute 'builtin.symbol_ref' but got 'builtin.string'"),
    ('%0 = "tt.advance"(%p, %n) : (!tt.ptr<f32>, i32) -> !tt.ptr<f32>',
     "operand must be a block pointer"),
    # enumerated attributes hold a value of their enum, of the kind the table says
    (f'%0 = "tt.load"(%p) {{cache = 9 : i32, operandSegmentSizes = array<i32: 1, 0, 0>}} : ({PTR}) -> f32',
     "'tt.load' at \"-\":2:8: attribute cache = 9 : i32 is not a CacheModifier (one of 1 NONE, 2 CA"),
    (f'%0 = "tt.load"(%p) {{cache = ".cg", operandSegmentSizes = array<i32: 1, 0, 0>}} : ({PTR}) -> f32',
     'attribute cache = ".cg" is not a CacheModifier'),
    (f'%0 = "tt.atomic_rmw"(%p, %n) {{atomic_rmw_op = 11 : i32, operandSegmentSizes = array<i32: 1, 1, 0>}} : '
     f'({PTR}, i32) -> i32', "attribute atomic_rmw_op = 11 : i32 is not a RMWOp"),
    ('%0 = "tt.get_program_id"() {axis = 3 : i32} : () -> i32', "is not a ProgramIDDim"),
    # verifiers
    ('%0 = "tt.make_range"() {start = 0 : i32, end = 4 : i32} : () -> tensor<4xi64>',
     "result must be tensor<4xi32>"),
    ('%r = "tt.make_range"() {start = 0 : i32, end = 4 : i32} : () -> tensor<4xi32>\n'
     '  %0 = "tt.histogram"(%r) {operandSegmentSizes = array<i32: 1, 0>} : (tensor<4xi32>) -> tensor<4xi64>',
     "result must be a 1-D tensor of i32"),
    ('%0 = "tt.int_to_ptr"(%n) : (i32) -> !tt.ptr<f32>', "converts i64 to a pointer"),
    ('%r = "tt.make_range"() {start = 0 : i32, end = 4 : i32} : () -> tensor<4xi32>\n'
     '  %0 = "tt.gather"(%r, %r) {axis = 1 : i32} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>',
     "axis 1 out of range for rank 1"),
    ('"tt.assert"(%n) {message = "m"} : (i32) -> ()', "condition must be i1"),
    ('"tt.print"(%n) {prefix = "", isSigned = array<i32: 1, 1>, '
     'operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (i32) -> ()',
     "isSigned needs one entry per argument (1)"),
])
def test_verification_rejects(body, message):
    assert message in _rejection(_module("  " + body))


def test_verify_module_reports_irdl_failures_as_verification_errors():
    with make_context() as ctx, ir.Location.unknown():
        m = ir.Module.parse(_module(""))
        entry = m.body.operations[0].regions[0].blocks[0]
        with ir.InsertionPoint.at_block_begin(entry):
            tt.create_op(tt.GET_PROGRAM_ID, results=[ir.IntegerType.get_signless(64)],
                         attributes={"axis": ir.IntegerAttr.get(ir.IntegerType.get_signless(32, ctx), 0)})
        with pytest.raises(VerificationError, match="expected 'i32' but got 'i64'"):
            tt.verify_module(m)


def test_decode_attributes_names_the_op_and_location():
    src = _module(f'  %0 = "tt.load"(%p) {{padding = 3 : i32, operandSegmentSizes = array<i32: 1, 0, 0>}} : '
                  f'({PTR}) -> f32')
    with make_context(), ir.Location.unknown():
        load = _first_op(ir.Module.parse(src), tt.LOAD)
        with pytest.raises(VerificationError, match=r"'tt.load' at \"-\":2:8: attribute padding = 3 : i32 is "
                                                    r"not a PaddingOption \(one of 1 PAD_ZERO, 2 PAD_NAN\)"):
            tt.decode_attributes(load)


@pytest.mark.parametrize("body, message", [
    (f'%x = arith.constant dense<1.0> : tensor<128xf32, {BLOCKED}>\n'
     f'  %0 = "ttg.convert_layout"(%x) : (tensor<128xf32, {BLOCKED}>) -> tensor<64xf32, {BLOCKED2}>',
     "converts a tensor to the same shape and element type in another layout"),
    (f'%x = arith.constant dense<1.0> : tensor<128xf32, {BLOCKED}>\n'
     f'  %0 = "ttg.local_alloc"(%x) : (tensor<128xf32, {BLOCKED}>) -> !ttg.memdesc<array<i64: 128>, f16, {SHARED}>',
     "does not match the buffer"),
    (f'%0 = "ttg.local_load"(%n) : (i32) -> tensor<128xf32, {BLOCKED}>',
     "expected base type 'ttg.memdesc' but got 'builtin.integer'"),
])
def test_ttg_verification_rejects(body, message):
    assert message in _rejection(_module("  " + body))


def test_ttg_ops_verify():
    _verify(_module(f"""
  %x = arith.constant dense<1.0> : tensor<128xf32, {BLOCKED}>
  %y = "ttg.convert_layout"(%x) : (tensor<128xf32, {BLOCKED}>) -> tensor<128xf32, {BLOCKED2}>
  %b = "ttg.local_alloc"(%x) : (tensor<128xf32, {BLOCKED}>) -> !ttg.memdesc<array<i64: 128>, f32, {SHARED}>
  %z = "ttg.local_load"(%b) : (!ttg.memdesc<array<i64: 128>, f32, {SHARED}>) -> tensor<128xf32, {BLOCKED2}>
  "ttg.local_store"(%y, %b) : (tensor<128xf32, {BLOCKED2}>, !ttg.memdesc<array<i64: 128>, f32, {SHARED}>) -> ()
  "ttg.barrier"() : () -> ()
  "ttg.local_dealloc"(%b) : (!ttg.memdesc<array<i64: 128>, f32, {SHARED}>) -> ()"""))
