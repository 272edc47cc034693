"""Compare the PTX of two kernel caches compiled from the same kernels (issue 33's byte-identity check): kernels are
matched by name, TTIR text (without source locations), num_warps, num_stages and constexprs; prints how many are
identical and, for each that changed, the PTX line / st.shared / bar.sync counts before and after.

    TRITIUM_TARGET=cuda:90 TRITIUM_COMPILE_ONLY=1 TRITIUM_CACHE_DIR=/tmp/before python -m pytest -q -n 2 tests/gpu
    (change the compiler)
    TRITIUM_TARGET=cuda:90 TRITIUM_COMPILE_ONLY=1 TRITIUM_CACHE_DIR=/tmp/after python -m pytest -q -n 2 tests/gpu
    python scripts/compare_ptx.py /tmp/before /tmp/after

The AMDGCN of hip kernels (``TRITIUM_TARGET=hip:gfx942``) is compared the same way. Exit status 1 when any matched kernel's PTX changed or a kernel's TTIR differs (listed by name: a TTIR-level change
shows there), ``--allow-changes`` to report only.
"""
import json
import os
import re
import sys

_LOC = re.compile(r"^#loc.*$|\s*loc\((?:[^()]|\([^()]*\))*\)", re.M)  # source locations (temporary files' paths)


def load(root: str) -> dict:
    """(name, TTIR, num_warps, num_stages, constexprs) -> (PTX, entry directory) for every kernel in cache ``root``."""
    out = {}
    for entry in os.listdir(root):
        meta = os.path.join(root, entry, "metadata.json")
        if not os.path.exists(meta):
            continue
        with open(meta) as f:
            m = json.load(f)
        md, name = m["metadata"], m["name"]
        try:
            with open(os.path.join(root, entry, name + ".ttir")) as f:
                ttir = f.read()
            asm = next(p for p in (os.path.join(root, entry, name + e) for e in (".ptx", ".amdgcn"))
                       if os.path.exists(p))
            with open(asm) as f:
                ptx = f.read()
        except (FileNotFoundError, StopIteration):
            continue
        key = (name, _LOC.sub("", ttir), md.get("num_warps"), md.get("num_stages"), json.dumps(md.get("constexprs"), sort_keys=True))
        out[key] = (ptx, entry)
    return out


def _stat(ptx: str) -> tuple:
    return ptx.count("\n"), ptx.count("st.shared"), ptx.count("bar.sync")


def main(argv) -> int:
    args = [x for x in argv if not x.startswith("--")]
    a, b = load(args[0]), load(args[1])
    common = set(a) & set(b)
    diff = sorted((k for k in common if a[k][0] != b[k][0]), key=lambda k: k[0])
    print(f"A {len(a)} B {len(b)} common {len(common)} identical {len(common) - len(diff)} changed {len(diff)}")
    for k in diff:
        print(f"  {k[0]:40s} w{k[2]} s{k[3]} lines/st.shared/bar {_stat(a[k][0])} -> {_stat(b[k][0])}  "
              f"{a[k][1][:8]} {b[k][1][:8]}")
    # kernels whose TTIR changed (a TTIR pass's change) match nothing on the other side: listed by name
    only_a, only_b = sorted(k[0] for k in set(a) - common), sorted(k[0] for k in set(b) - common)
    if only_a or only_b:
        names = sorted(set(only_a) | set(only_b))
        print(f"TTIR differs or kernel only on one side: {len(only_a)} / {len(only_b)} entries, kernels: "
              + ", ".join(f"{n} ({only_a.count(n)}/{only_b.count(n)})" for n in names))
    return 1 if (diff or only_a or only_b) and "--allow-changes" not in argv else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
