"""The MLIR Python binding behaviours the passes rely on (MLIR 22)."""
from mlir import ir, passmanager

from tritium.dialects import make_context

SRC = """
func.func @k(%a: tensor<4xi32>, %b: tensor<4xi32>) -> tensor<4xi32> {
  %0 = arith.addi %a, %b overflow<nsw> : tensor<4xi32>
  %1 = arith.muli %0, %b : tensor<4xi32>
  %2 = arith.cmpi slt, %0, %b : tensor<4xi32>
  return %1 : tensor<4xi32>
}
"""


def _ops(m):
    blk = m.body.operations[0].regions[0].blocks[0]
    return blk, [o.operation for o in blk.operations]


def test_value_equality_and_hash_across_wrappers():
    with make_context(), ir.Location.unknown():
        m = ir.Module.parse(SRC)
        blk, (add, mul, cmp, ret) = _ops(m)
        # the same SSA value reached as a result and as an operand: equal, same hash, usable as a dict key
        as_result, as_operand = add.results[0], mul.operands[0]
        assert as_result is not as_operand
        assert as_result == as_operand and hash(as_result) == hash(as_operand)
        assert {as_result: 1}.get(as_operand) == 1
        assert add.result == add.results[0]
        # block arguments too, and they differ from other values
        arg = blk.arguments[0]
        assert add.operands[0] == arg and {arg: 1}.get(add.operands[0]) == 1
        assert arg != blk.arguments[1] and add.results[0] != mul.results[0]
        assert len({add.results[0], mul.operands[0], cmp.operands[0]}) == 1
        # isinstance-dispatch: results are OpResult (owner: an op), arguments BlockArgument (owner: a Block)
        assert isinstance(mul.operands[0], ir.OpResult) and isinstance(add.operands[0], ir.BlockArgument)
        assert isinstance(add.operands[0].owner, ir.Block)
        assert mul.operands[0].owner.operation == add


def test_operation_identity_and_invalidation():
    """Operation wrappers are NOT unique per op (no live-object map in MLIR 22): two wrappers of one op
    compare and hash equal, but ``erase()`` only invalidates the wrapper it was called on.  Touching another
    wrapper of an erased op is a use-after-free, so the passes never keep a second handle to an op they
    erase (see ``_util.py``)."""
    with make_context(), ir.Location.unknown():
        m = ir.Module.parse(SRC)
        _, ops = _ops(m)
        _, again = _ops(m)
        assert ops[2] is not again[2]
        assert ops[2] == again[2] and hash(ops[2]) == hash(again[2])
        victim = ops[2]
        victim.erase()
        try:
            victim.name
        except RuntimeError as e:
            assert "invalidated" in str(e)
        else:  # pragma: no cover
            raise AssertionError("the erased wrapper must be invalidated")


def test_attributes_include_inherent_and_create_restores_them():
    with make_context(), ir.Location.unknown():
        m = ir.Module.parse(SRC)
        _, (add, mul, cmp, ret) = _ops(m)
        names = list(add.attributes)
        assert names == ["overflowFlags"] and "predicate" in cmp.attributes
        with ir.InsertionPoint(add):
            new = ir.Operation.create("arith.addi", results=[add.results[0].type], operands=list(add.operands),
                                      attributes={k: add.attributes[k] for k in add.attributes})
        assert "overflow<nsw>" in str(new)
        m.operation.verify()


def test_python_pass_in_pass_manager():
    seen = []

    def my_pass(op, pass_):
        seen.append(op.name)

    with make_context(), ir.Location.unknown():
        m = ir.Module.parse(SRC)
        pm = passmanager.PassManager("builtin.module")
        pm.add(my_pass, name="tritium-test")
        pm.add("canonicalize")
        assert "tritium-test" in str(pm)
        pm.run(m.operation)
    # a module-anchored pass manager gives the callable the module op, once
    assert seen == ["builtin.module"]


def test_python_exception_in_pass_propagates():
    def boom(op, pass_):
        raise ValueError("boom")

    with make_context(), ir.Location.unknown():
        m = ir.Module.parse(SRC)
        pm = passmanager.PassManager("builtin.module")
        pm.add(boom)
        try:
            pm.run(m.operation)
        except ValueError as e:
            assert "boom" in str(e)
        else:  # pragma: no cover
            raise AssertionError("expected the pass's exception")
