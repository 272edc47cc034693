"""A kernel served from the file cache names its own file in errors, not the file of the identical kernel (same
base name, another directory) that stored the entry: the cache stays location-independent, the locations follow
the kernel being launched."""
import importlib.util
import shutil

import numpy as np
import pytest

from tritium.compiler import cache as fcache
from tritium.compiler import registry
from tritium.errors import OutOfBoundsError

_KERNEL = '''
import tritium
import tritium.language as tl


@tritium.jit
def _helper(p, offs):
    return tl.load(p + offs)  # the faulting line (in the callee)


@tritium.jit
def oob(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = _helper(x_ptr, offs)
    tl.store(x_ptr + offs, x + 1)
'''


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("mode", ["interpreter", "interpreter:eager"])
def test_cached_kernel_names_the_launching_file(tmp_path, monkeypatch, mode):
    monkeypatch.setenv("TRITIUM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TRITIUM_DISABLE_CACHE", raising=False)
    registry.set_active(mode)
    try:
        a, b = tmp_path / "a", tmp_path / "b"
        for d in (a, b):
            d.mkdir()
            (d / "same_name.py").write_text(_KERNEL)
        ka = _load(a / "same_name.py", f"same_name_a_{mode[-5:]}").oob
        kb = _load(b / "same_name.py", f"same_name_b_{mode[-5:]}").oob
        with pytest.raises(OutOfBoundsError) as ea:
            ka[(1,)](np.zeros(8, np.float32), BLOCK=16)
        assert str(a / "same_name.py") in str(ea.value)
        hits = fcache.stats["hits"]
        shutil.rmtree(a)  # the entry's file is gone
        with pytest.raises(OutOfBoundsError) as eb:
            kb[(1,)](np.zeros(8, np.float32), BLOCK=16)
        assert fcache.stats["hits"] == hits + 1, "b's kernel should come from the entry a stored"
        msg = str(eb.value)
        assert str(b / "same_name.py") in msg and str(a) not in msg, msg
        assert "return tl.load(p + offs)  # the faulting line (in the callee)" in msg, msg  # the excerpt
        kernel = next(iter(kb.cache.values()))
        kernel = next(iter(kernel.values()))
        assert kernel.metadata["source_files"] == [str(b / "same_name.py")]
        assert all(str(a) not in t for t in kernel.asm.values() if isinstance(t, str))
    finally:
        registry.set_active(None)
