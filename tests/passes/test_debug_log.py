"""TRITIUM_LOG: the passes' debug output on stderr."""
import logging
import os
import subprocess
import sys

from tritium.passes import log_from_env


def test_log_from_env_configures_the_named_loggers_once(capsys):
    name = "tritium.passes.test_debug_log"
    logger = logging.getLogger(name)
    try:
        assert log_from_env(f" {name} ,0,") == [logger]
        log_from_env(name)
        assert logger.level == logging.DEBUG and len(logger.handlers) == 1
        logger.debug("vector width 1: %s", "why")
        assert capsys.readouterr().err == f"{name}: vector width 1: why\n"
        assert log_from_env("1") == [logging.getLogger("tritium")] and log_from_env("") == []
    finally:
        for lg in (logger, logging.getLogger("tritium")):
            lg.handlers = [h for h in lg.handlers if not getattr(h, "_tritium_log", False)]
            lg.setLevel(logging.NOTSET)


def test_tritium_log_turns_on_the_passes_debug_output(tmp_path):
    script = tmp_path / "kernel.py"
    script.write_text("""
import tritium, tritium.language as tl
from tritium.compiler import ASTSource, compile

@tritium.jit
def copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)

compile(ASTSource(copy, {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"}, {"BLOCK": 256}), target="cuda:90")
""")
    env = dict(os.environ, TRITIUM_LOG="tritium.passes.ttgir.coalesce")
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = [x for x in out.stderr.splitlines() if x.startswith("tritium.passes.ttgir.coalesce: 'tt.")]
    assert len(lines) == 2 and "1 element(s) per thread" in lines[0], out.stderr
