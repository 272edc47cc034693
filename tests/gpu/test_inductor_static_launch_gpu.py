"""torch.compile on the GPU with tritium standing in for Triton, and Inductor's static C++ launcher
(TRITIUM_INDUCTOR_STATIC_LAUNCH=1, tests/inductor/test_static_launch.py checks the parameters on the CPU): Inductor
takes the static launcher for tritium's kernels, and the compiled functions match eager.  Without the switch it
keeps ``CompiledKernel.run`` (the cubin is not where it looks), with the same results.  A fresh process each: the
alias must be in place before torch imports ``triton``."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from .conftest import COMPILE_ONLY, DEVICE_REASON

SCRIPT = textwrap.dedent(r'''
    import json, sys
    import tritium
    tritium.install_as_triton()
    import torch
    import torch._inductor.config as cfg
    from torch._inductor.runtime import triton_heuristics as th

    cfg.compile_threads = 1  # compile (and decide how to launch) in this process, where the spy is
    decided = []
    orig = th.StaticTritonCompileResult.can_statically_launch

    def spy(*args, **kwargs):
        r = orig(*args, **kwargs)
        decided.append(r is not None)
        return r

    th.StaticTritonCompileResult.can_statically_launch = staticmethod(spy)

    def pointwise(x, y):
        return torch.relu(x * y + 1.5) - torch.sigmoid(y)

    def softmax_rows(x):
        return torch.softmax(x * 0.5, dim=-1)

    def norm_and_sum(x, w):
        return torch.nn.functional.layer_norm(x, x.shape[-1:], w).sum(dim=0)

    torch.manual_seed(0)
    errs = {}
    for name, fn, args in [
            ("pointwise", pointwise, (torch.randn(1000, 257, device="cuda"), torch.randn(257, device="cuda"))),
            ("softmax", softmax_rows, (torch.randn(300, 1025, device="cuda"),)),
            ("layer_norm_sum", norm_and_sum, (torch.randn(64, 384, device="cuda", dtype=torch.float16),
                                              torch.randn(384, device="cuda", dtype=torch.float16)))]:
        got = torch.compile(fn)(*args)
        again = torch.compile(fn)(*args)  # the launch path a second call takes
        want = fn(*args)
        scale = want.float().abs().max().item()
        errs[name] = [max((g.float() - want.float()).abs().max().item() for g in (got, again)), scale]
    print("RESULT " + json.dumps({"static": decided, "errs": errs}))
''')


def _run(tmp_path, switch: str) -> dict:
    env = dict(os.environ, TRITIUM_INDUCTOR_STATIC_LAUNCH=switch, TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"),
               TRITIUM_CACHE_DIR=str(tmp_path / "tritium"), TRITON_CACHE_DIR=str(tmp_path / "triton"))
    for var in ("TRITIUM_DISABLE_CACHE", "TRITIUM_AS_TRITON", "TRITIUM_TARGET"):
        env.pop(var, None)
    script = tmp_path / "compiled.py"
    script.write_text(SCRIPT)
    p = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=500)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


@pytest.mark.cuda_only("Inductor's static launcher is CUDA's")
@pytest.mark.parametrize("switch", ["1", "0"])
def test_torch_compile_through_the_static_launcher(tmp_path, switch):
    if COMPILE_ONLY or DEVICE_REASON is not None:
        pytest.skip(DEVICE_REASON or "compile-only run: nothing launches")
    pytest.importorskip("torch._inductor.runtime.static_triton_launcher")
    r = _run(tmp_path, switch)
    assert r["static"], "Inductor compiled no kernel"
    if switch == "1":
        assert all(r["static"]), r  # every kernel launched from C++
    else:
        assert not any(r["static"]), r  # no cubin where Inductor looks: CompiledKernel.run
    for name, (err, scale) in r["errs"].items():
        assert scale > 1e-3, (name, scale)  # random data, not zeros (softmax rows of 1,025: ~0.01)
        assert err <= 1e-2 * scale + 1e-6, (name, err, scale)
