"""Membar: barriers between shared-memory accesses that could race, and nowhere else."""
from mlir import ir

from tritium.passes.analysis.allocation import allocate_shared_memory
from tritium.passes.analysis.membar import insert_barriers

from .test_allocation import MD, MD2, T16, T32, module, parse

CVT = '"ttg.convert_layout"(%t) : (tensor<1024xf32, #A>) -> tensor<1024xf32, #C>'


def run(body):
    ctx, m = parse(module(body))
    with ctx:
        allocate_shared_memory(m.operation)
        n = insert_barriers(m.operation)
        m.operation.verify()
        text = str(m)
        ir.Module.parse(text)
    return n, text


def sequence(text):
    """The shared-memory ops and barriers in printed order."""
    keep = ("ttg.local_alloc", "ttg.local_load", "ttg.local_store", "ttg.convert_layout", "ttg.barrier",
            "scf.for", "scf.if", "} else {")
    out = []
    for line in text.splitlines():
        for k in keep:
            if k in line:
                out.append(k.split(".")[-1] if k.startswith(("ttg", "scf")) else "else")
    return out


def test_raw_after_a_store_to_shared_memory():
    n, text = run(f"""
  %m = "ttg.local_alloc"(%a) : ({T16}) -> {MD}
  %x = "ttg.local_load"(%m) : ({MD}) -> {T16}
  %y = "ttg.local_load"(%m) : ({MD}) -> {T16}""")
    assert n == 1
    assert sequence(text) == ["local_alloc", "barrier", "local_load", "local_load"]  # read after read: none


def test_war_between_two_scratch_users_of_the_same_bytes():
    n, text = run(f"""
  %c1 = {CVT}
  %c2 = {CVT}
  "tt.print"(%c1, %c2) {{prefix = "", operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0>}} : (tensor<1024xf32, #C>, tensor<1024xf32, #C>) -> ()""")
    assert n == 1
    assert sequence(text) == ["convert_layout", "barrier", "convert_layout"]


def test_disjoint_buffers_need_no_barrier():
    n, text = run(f"""
  %m1 = "ttg.local_alloc"(%a) : ({T16}) -> {MD}
  %m2 = "ttg.local_alloc"(%b) : ({T32}) -> {MD2}
  "ttg.barrier"() : () -> ()
  %x = "ttg.local_load"(%m1) : ({MD}) -> {T16}
  "ttg.local_store"(%b, %m2) : ({T32}, {MD2}) -> ()
  %y = "ttg.local_load"(%m1) : ({MD}) -> {T16}""")
    assert n == 0  # the existing barrier separates the allocs from the reads; m1 and m2 do not overlap


def test_loop_carried_hazard_gets_a_barrier_inside_the_loop():
    n, text = run(f"""
  %m = "ttg.local_alloc"() : () -> {MD}
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c4 = arith.constant 4 : i32
  scf.for %i = %c0 to %c4 step %c1 : i32 {{
    %x = "ttg.local_load"(%m) : ({MD}) -> {T16}
    "ttg.local_store"(%x, %m) : ({T16}, {MD}) -> ()
  }}""")
    # in the body: store after load (WAR) needs one; the next iteration's load after this store (RAW) another
    assert n == 2
    assert sequence(text) == ["local_alloc", "for", "barrier", "local_load", "barrier", "local_store"]


def test_write_in_a_branch_then_read_after_it():
    n, text = run(f"""
  %m = "ttg.local_alloc"() : () -> {MD}
  %c = arith.constant true
  scf.if %c {{
    "ttg.local_store"(%a, %m) : ({T16}, {MD}) -> ()
  }} else {{
  }}
  %x = "ttg.local_load"(%m) : ({MD}) -> {T16}""")
    assert n == 1
    assert sequence(text) == ["local_alloc", "if", "local_store", "else", "barrier", "local_load"]


def test_idempotent():
    body = f"""
  %m = "ttg.local_alloc"(%a) : ({T16}) -> {MD}
  %x = "ttg.local_load"(%m) : ({MD}) -> {T16}"""
    ctx, m = parse(module(body))
    with ctx:
        allocate_shared_memory(m.operation)
        assert insert_barriers(m.operation) == 1
        assert insert_barriers(m.operation) == 0
