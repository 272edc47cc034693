"""Testing and benchmarking helpers with Triton's names and signatures.

* :func:`do_bench` times a callable in milliseconds: with device events on GPU backends (the backend driver's
  own benchmarker when it has one, else ``torch.cuda.Event`` when the active target is cuda/hip), with
  ``time.perf_counter`` on the interpreter;
* :func:`assert_close` compares arrays, tensors and scalars;
* :class:`Benchmark` + :func:`perf_report` sweep a function over arguments and write a table, a CSV and a PNG
  plot (pandas is not needed: ``run(return_df=True)`` returns a :class:`Table`).
"""
from __future__ import annotations

import csv
import math
import os
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence



# ------------------------------------------------------------------------------------------- assert_close
def _to_numpy(x: Any):
    import numpy as np

    if hasattr(x, "detach") and hasattr(x, "cpu"):  # torch
        x = x.detach().cpu()
        if str(getattr(x, "dtype", "")) in ("torch.bfloat16", "torch.float8_e4m3fn", "torch.float8_e5m2",
                                            "torch.float8_e4m3fnuz", "torch.float8_e5m2fnuz"):
            x = x.float()
        return x.numpy()
    return np.asarray(x)


def assert_close(x: Any, y: Any, atol: Any = None, rtol: Any = None, err_msg: str = "") -> None:
    """Assert ``x`` and ``y`` (arrays, tensors or scalars) are elementwise close, as ``triton.testing``'s.

    ``atol`` defaults to 1e-2 and ``rtol`` to 0; either may be a callable of ``x``'s dtype.  NaNs compare equal.
    """
    import numpy as np

    dtype = getattr(x, "dtype", None)
    atol = 1e-2 if atol is None else atol
    rtol = 0.0 if rtol is None else rtol
    atol = atol(dtype) if callable(atol) else atol
    rtol = rtol(dtype) if callable(rtol) else rtol
    a, b = _to_numpy(x), _to_numpy(y)
    if a.dtype == np.bool_ or b.dtype == np.bool_:
        np.testing.assert_array_equal(a, b, err_msg=err_msg)
        return
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if a.size > 1 or b.size > 1:
        np.testing.assert_allclose(a64, b64, atol=atol, rtol=rtol, equal_nan=True, err_msg=err_msg)
        return
    if not np.allclose(a64, b64, atol=atol, rtol=rtol, equal_nan=True):
        raise AssertionError(f"{err_msg} {a} is not close to {b} (atol={atol}, rtol={rtol})".strip())


# ------------------------------------------------------------------------------------------- do_bench
from .runtime.bench import _RETURN_MODES, do_bench, do_bench_cudagraph  # noqa: E402,F401  (Triton's names here)


# ------------------------------------------------------------------------------------------- perf_report
@dataclass(eq=False)
class Benchmark:
    """One sweep for :func:`perf_report` (``triton.testing.Benchmark``).

    ``x_names``: argument names set from each entry of ``x_vals`` (a value, or a tuple with one value per name);
    ``line_arg``: the argument set from each of ``line_vals`` (one plotted line each, labelled ``line_names``);
    ``args``: fixed keyword arguments; ``plot_name``: file stem of the CSV / PNG (no plot when empty);
    ``styles``: ``[(color, linestyle), ...]`` per line.  The benchmarked function returns a number, or
    ``(mean, min, max)`` (the min/max band is shaded in the plot).
    """

    x_names: List[str]
    x_vals: List[Any]
    line_arg: str
    line_vals: List[Any]
    line_names: List[str]
    plot_name: str
    args: Dict[str, Any]
    xlabel: str = ""
    ylabel: str = ""
    x_log: bool = False
    y_log: bool = False
    styles: Any = None

    def __post_init__(self):
        self.x_names, self.x_vals = list(self.x_names), list(self.x_vals)
        self.line_vals, self.line_names, self.args = list(self.line_vals), list(self.line_names), dict(self.args)
        if len(self.line_names) != len(self.line_vals):
            raise ValueError(f"Benchmark '{self.plot_name}': {len(self.line_vals)} line_vals but "
                             f"{len(self.line_names)} line_names")


class Table:
    """What ``perf_report(...).run(return_df=True)`` returns instead of a pandas DataFrame.

    ``columns`` (x names then line names), ``rows`` (lists, one per x value); ``table[col]`` is a column as a
    list, ``to_dicts()`` the rows as dicts, ``to_string()`` the printed table, ``to_csv(path)`` the CSV.
    ``min`` / ``max`` hold the min / max columns per line name when the function returned triples.
    """

    def __init__(self, columns: List[str], rows: List[list], min: Optional[dict] = None,
                 max: Optional[dict] = None):
        self.columns = list(columns)
        self.rows = [list(r) for r in rows]
        self.min = min or {}
        self.max = max or {}

    def __getitem__(self, col: str) -> list:
        i = self.columns.index(col)
        return [r[i] for r in self.rows]

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def shape(self) -> tuple:
        return (len(self.rows), len(self.columns))

    def to_dicts(self) -> List[dict]:
        return [dict(zip(self.columns, r)) for r in self.rows]

    @staticmethod
    def _fmt(v: Any, precision: int = 6) -> str:
        if v is None:
            return ""
        if isinstance(v, float):
            return f"{v:.{precision}f}"
        return str(v)

    def to_string(self) -> str:
        cells = [[str(c) for c in self.columns]]
        cells += [[str(i)] + [self._fmt(v) for v in r] for i, r in enumerate(self.rows)]
        cells[0] = [""] + cells[0]
        widths = [max(len(row[j]) for row in cells) for j in range(len(cells[0]))]
        return "\n".join(" ".join(c.rjust(w) for c, w in zip(row, widths)) for row in cells)

    def to_csv(self, path: str, precision: int = 6) -> None:
        with open(path, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(self.columns)
            for r in self.rows:
                w.writerow([self._fmt(v, precision) for v in r])

    def __repr__(self) -> str:
        return self.to_string()


def _split_result(ret: Any) -> tuple:
    if isinstance(ret, (list, tuple)):
        if len(ret) != 3:
            raise ValueError(f"a perf_report function returns a number or (mean, min, max), got {ret!r}")
        return tuple(ret)
    return ret, None, None


def _plot(bench: Benchmark, table: Table, mins: dict, maxs: dict, save_path: str, show_plots: bool) -> None:
    import matplotlib

    if not show_plots:
        try:
            matplotlib.use("Agg")
        except (ImportError, ValueError):  # a backend already in use is fine
            pass
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    first_x = bench.x_names[0]
    xs = table[first_x]
    for i, name in enumerate(bench.line_names):
        color = bench.styles[i][0] if bench.styles else None
        ls = bench.styles[i][1] if bench.styles else None
        ys = [math.nan if v is None else v for v in table[name]]
        ax.plot(xs, ys, label=name, color=color, ls=ls)
        lo, hi = mins.get(name), maxs.get(name)
        if lo and hi and all(v is not None for v in lo + hi):
            ax.fill_between(xs, lo, hi, alpha=0.15, color=color)
    ax.legend()
    ax.set_xlabel(bench.xlabel or first_x)
    ax.set_ylabel(bench.ylabel)
    ax.set_xscale("log" if bench.x_log else "linear")
    ax.set_yscale("log" if bench.y_log else "linear")
    if save_path:
        fig.savefig(os.path.join(save_path, f"{bench.plot_name}.png"))
    if show_plots:
        plt.show()
    plt.close(fig)


class Mark:
    """A function decorated with :func:`perf_report`; ``.run(...)`` runs its benchmarks."""

    def __init__(self, fn: Callable, benchmarks: Any):
        self.fn = fn
        self.benchmarks = benchmarks

    def _run(self, bench: Benchmark, save_path: str, show_plots: bool, print_data: bool,
             save_precision: int = 6, **kwargs) -> Table:
        rows, mins, maxs = [], {n: [] for n in bench.line_names}, {n: [] for n in bench.line_names}
        for x in bench.x_vals:
            xs = list(x) if isinstance(x, (list, tuple)) else [x] * len(bench.x_names)
            if len(xs) != len(bench.x_names):
                raise ValueError(f"Benchmark '{bench.plot_name}': x value {x!r} has {len(xs)} entries for "
                                 f"{len(bench.x_names)} x_names {bench.x_names}")
            x_args = dict(zip(bench.x_names, xs))
            means = []
            for name, y in zip(bench.line_names, bench.line_vals):
                mean, lo, hi = _split_result(self.fn(**x_args, **{bench.line_arg: y}, **bench.args, **kwargs))
                means.append(mean)
                mins[name].append(lo)
                maxs[name].append(hi)
            rows.append(xs + means)
        table = Table(bench.x_names + bench.line_names, rows, mins, maxs)
        if save_path:
            os.makedirs(save_path, exist_ok=True)
        if bench.plot_name and (save_path or show_plots):
            _plot(bench, table, mins, maxs, save_path, show_plots)
        if print_data:
            print(f"{bench.plot_name}:")
            print(table.to_string())
        if save_path and bench.plot_name:
            table.to_csv(os.path.join(save_path, f"{bench.plot_name}.csv"), precision=save_precision)
        return table

    def run(self, show_plots: bool = False, print_data: bool = False, save_path: str = "",
            return_df: bool = False, **kwargs):
        """Run every benchmark: print the table (``print_data``), write ``<plot_name>.csv`` / ``.png`` and
        ``results.html`` into ``save_path``, and return the :class:`Table` (a list of them for a list of
        benchmarks) when ``return_df``."""
        single = isinstance(self.benchmarks, Benchmark)
        benchmarks = [self.benchmarks] if single else list(self.benchmarks)
        tables = []
        try:
            for bench in benchmarks:
                tables.append(self._run(bench, save_path, show_plots, print_data, **kwargs))
        finally:
            if save_path:
                os.makedirs(save_path, exist_ok=True)
                with open(os.path.join(save_path, "results.html"), "w", encoding="utf-8") as html:
                    html.write("<html><body>\n")
                    for bench in benchmarks:
                        if bench.plot_name:
                            html.write(f'<image src="{bench.plot_name}.png"/>\n')
                    html.write("</body></html>\n")
        if return_df:
            return tables[0] if single else tables
        return None


def perf_report(benchmarks):
    """Decorator: ``@perf_report(Benchmark(...) or [Benchmark, ...])`` turns ``fn`` into a :class:`Mark`."""
    return lambda fn: Mark(fn, benchmarks)


def _props(device=None) -> dict:
    from .runtime import driver

    return driver.active.utils.get_device_properties(device)


def get_dram_gbps(device=None) -> float:
    """Triton's ``get_dram_gbps``: the device memory's peak bandwidth in GB/s from its clock (kHz, double data
    rate) and bus width (bits)."""
    p = _props(device)
    return p["mem_clock_rate"] * 2 * p["mem_bus_width"] / 8 / 1e6


def _ops_per_subcore(dtype, table: dict) -> int:
    name = str(getattr(dtype, "name", dtype)).replace("torch.", "")
    for names, ops in table.items():
        if name in names:
            return ops
    raise RuntimeError(f"dtype {dtype} not supported")


def _capability(device=None) -> tuple:
    from .runtime import driver

    t = driver.active.get_current_target()
    arch = t.arch if isinstance(t.arch, int) else 80
    return divmod(arch, 10)


def get_max_tensorcore_tflops(dtype, clock_rate, device=None) -> float:
    """Triton's ``get_max_tensorcore_tflops``: 4 tensor cores per SM, each doing ``ops`` dense multiply-adds
    of ``dtype`` per clock (``clock_rate`` in kHz): 256 for tf32 / int32, 512 for 16-bit, 1024 for 8-bit types
    (Ampere and later; fp16 only, 256, before)."""
    sub = _props(device)["multiprocessor_count"] * 4
    if _capability(device)[0] < 8:
        ops = 256
    else:
        ops = _ops_per_subcore(dtype, {("float32", "fp32", "int32", "tf32"): 256,
                                       ("float16", "fp16", "bfloat16", "bf16", "int16"): 512,
                                       ("int8", "float8_e4m3fn", "float8_e5m2", "fp8e4nv", "fp8e5", "fp8e4b15",
                                        "float8e4nv", "float8e5"): 1024})
    return sub * clock_rate * ops * 1e-9


def get_max_simd_tflops(dtype, clock_rate, device=None) -> float:
    """Triton's ``get_max_simd_tflops``: the CUDA cores' peak (4 sub-cores per SM, 32 fp32 / 64 fp16 lanes)."""
    sub = _props(device)["multiprocessor_count"] * 4
    ops = _ops_per_subcore(dtype, {("float32", "fp32"): 32, ("float16", "fp16", "bfloat16", "bf16"): 64})
    return sub * clock_rate * ops * 1e-9


__all__ = ["assert_close", "do_bench", "do_bench_cudagraph", "Benchmark", "Mark", "Table", "perf_report",
           "get_dram_gbps", "get_max_tensorcore_tflops", "get_max_simd_tflops"]
