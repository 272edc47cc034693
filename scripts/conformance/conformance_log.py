"""pytest plugin (``-p conformance_log``) for scripts/triton_conformance.py: every test's outcome as it happens, and
shards of a long run.

* ``TRITIUM_CONFORMANCE_LOG=FILE``: one line per test, appended when its report arrives (so a run cut short by a
  time limit still leaves what it did): ``outcome<TAB>node id<TAB>first line of the failure or skip reason``.
* ``TRITIUM_CONFORMANCE_SHARD=i/n``: run only the collected tests whose index is ``i`` modulo ``n``;
* ``TRITIUM_CONFORMANCE_SELECT=FILE``: run only the tests whose ids (``test_core.py::test_x[...]``, one a line, a
  tab and anything after it ignored: a ``--log`` file's second column works too) are in FILE.
"""
import os

_LOG = os.environ.get("TRITIUM_CONFORMANCE_LOG")


def _short(nodeid: str) -> str:
    path, _, case = nodeid.partition("::")
    return f"{path.split('/')[-1]}::{case}"


def pytest_collection_modifyitems(config, items):
    select = os.environ.get("TRITIUM_CONFORMANCE_SELECT")
    if select:
        with open(select) as f:
            want = {_short(p) for line in f for p in line.rstrip("\n").split("\t") if "::" in p}
        drop = [it for it in items if _short(it.nodeid) not in want]
        config.hook.pytest_deselected(items=drop)
        items[:] = [it for it in items if _short(it.nodeid) in want]
    shard = os.environ.get("TRITIUM_CONFORMANCE_SHARD")
    if not shard:
        return
    i, n = (int(x) for x in shard.split("/"))
    keep = [it for k, it in enumerate(items) if k % n == i]
    config.hook.pytest_deselected(items=[it for k, it in enumerate(items) if k % n != i])
    items[:] = keep


def _reason(report) -> str:
    lr = report.longrepr
    if lr is None:
        return ""
    if isinstance(lr, tuple) and len(lr) == 3:  # a skip: (file, line, reason)
        text = str(lr[2])
    else:
        crash = getattr(getattr(lr, "reprcrash", None), "message", None)
        text = crash if crash else str(lr)
    text = text.strip().splitlines()[0] if text.strip() else ""
    return text.replace("\t", " ")[:300]


def pytest_runtest_logreport(report):
    if not _LOG or os.environ.get("PYTEST_XDIST_WORKER"):  # xdist: the controller writes what workers report
        return
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed") or \
            (report.when == "teardown" and report.outcome == "failed"):
        outcome = report.outcome if report.when == "call" or report.outcome == "skipped" else "error"
        if hasattr(report, "wasxfail"):
            outcome = "xfailed" if report.outcome == "skipped" else "xpassed"
        with open(_LOG, "a") as f:
            f.write(f"{outcome}\t{report.nodeid}\t{_reason(report)}\n")
