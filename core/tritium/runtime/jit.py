"""``@tritium.jit``: the JITFunction that holds a kernel's source and launches it."""
from __future__ import annotations

import ast
import functools
import hashlib
import inspect
import operator
import textwrap
import types
from typing import Any, Callable, Optional

from .binder import DIVISIBILITY, Binder, _is_constexpr_value, unwrap_constexpr


class KernelParam:
    """One parameter of a jit function."""

    def __init__(self, num: int, param: inspect.Parameter, do_not_specialize: bool):
        self.num = num
        self._param = param
        self.do_not_specialize = do_not_specialize

    @property
    def name(self) -> str:
        return self._param.name

    @property
    def annotation(self) -> Any:
        return self._param.annotation

    @property
    def is_constexpr(self) -> bool:
        ann = self._param.annotation
        if ann is inspect.Parameter.empty:
            return False
        if isinstance(ann, str):
            return ann.split(".")[-1] == "constexpr"
        return getattr(ann, "__name__", None) == "constexpr" or ann.__class__.__name__ == "constexpr"

    @property
    def has_default(self) -> bool:
        return self._param.default is not inspect.Parameter.empty

    @property
    def default(self) -> Any:
        return self._param.default


class KernelInterface:
    """``fn[grid](*args, **kwargs)`` launches ``fn.run(*args, grid=grid, warmup=False, **kwargs)``."""

    def run(self, *args, grid, warmup=False, **kwargs):
        raise NotImplementedError

    def __getitem__(self, grid) -> Callable:
        return lambda *args, **kwargs: self.run(*args, grid=grid, warmup=False, **kwargs)


def _normalize_grid(name: str, grid: Any, meta: dict) -> tuple:
    if callable(grid):
        grid = grid(meta)
    if isinstance(grid, int) or hasattr(grid, "__index__"):
        grid = (grid,)
    try:
        g = tuple(int(x) for x in grid)
    except TypeError:
        raise TypeError(f"kernel '{name}': grid must be a tuple of ints or a callable returning one, "
                        f"got {grid!r}") from None
    if not 1 <= len(g) <= 3:
        raise ValueError(f"kernel '{name}': grid must have 1 to 3 dimensions, got {g}")
    return g + (1,) * (3 - len(g))


class JITFunction(KernelInterface):
    """A function decorated with ``@tritium.jit``.

    Attributes the frontend reads: ``fn``, ``src`` (dedented source), ``file``, ``starting_line_number``
    (line of the ``def`` in ``file``), ``params`` (list of :class:`KernelParam`), ``arg_names``,
    ``noinline``, ``__globals__``, ``parse()`` (the ``ast.Module`` of ``src`` with line numbers of ``file``).

    Launching (``fn[grid](*args, **kwargs)``) binds the arguments (:mod:`tritium.runtime.binder`), looks the
    specialisation up in an in-memory cache (``self.cache[device][key]``), compiles on a miss through
    :func:`tritium.compiler.compile` (which consults the file cache, :mod:`tritium.runtime.cache`), then launches
    on the active backend's driver.

    ``cache_key`` hashes the source, the ``@jit`` functions it calls (transitively) and the global scalar /
    constexpr values they read (found by scanning the AST as the frontend resolves names: closure cells, then
    module globals).  Like Triton, those globals are recorded (``used_global_vals``) and every launch checks they
    still hold the compile-time value: a changed one raises ``RuntimeError``.

    A relaunch takes a fast path: a binder generated for this kernel's signature (Python binds the arguments)
    computes a tuple of per-argument specialisation descriptors, which maps straight to the compiled kernel and
    the positions of its runtime arguments; the general :class:`Binder` runs only on a miss.
    """

    def __init__(self, fn: Callable, *, do_not_specialize=(), do_not_specialize_on_alignment=(),
                 noinline: bool = False, debug: Optional[bool] = None, repr=None, launch_metadata=None):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__qualname__ = getattr(fn, "__qualname__", fn.__name__)
        self.__module__ = fn.__module__
        self.__doc__ = fn.__doc__
        self.__globals__ = fn.__globals__
        self.noinline = noinline
        self.debug = debug
        self.repr = repr
        self.launch_metadata = launch_metadata
        self.signature = inspect.signature(fn)
        self.arg_names = list(self.signature.parameters)
        dns = {self.arg_names[i] if isinstance(i, int) else i for i in (do_not_specialize or ())}
        dnsa = {self.arg_names[i] if isinstance(i, int) else i for i in (do_not_specialize_on_alignment or ())}
        self.do_not_specialize = dns
        self.do_not_specialize_on_alignment = dnsa
        self.params = [KernelParam(i, p, p.name in dns) for i, p in enumerate(self.signature.parameters.values())]
        lines, start = inspect.getsourcelines(fn)
        # drop decorators: the source starts at the ``def`` line
        src = textwrap.dedent("".join(lines))
        self.file = inspect.getsourcefile(fn) or "<unknown>"
        self.starting_line_number = start
        self.src = src
        self._ast = None
        self._cache_key = None
        self._binder = None
        self._fast_binder = None
        self._grid_launcher = None
        #: ``[(label, compile-time value, getter)]`` of the globals this kernel and its callees read
        self.used_global_vals: Optional[list] = None
        self._globals_check = None
        self.cache: dict = _KernelCache()  # device key -> specialisation key -> CompiledKernel
        self.pre_run_hooks: list = []
        self.compile_count = 0  # compilations done by run()/warmup() (tests, diagnostics)

    @property
    def constexpr_names(self) -> list:
        return [p.name for p in self.params if p.is_constexpr]

    @property
    def non_constexpr_names(self) -> list:
        return [p.name for p in self.params if not p.is_constexpr]

    def parse(self) -> ast.Module:
        """The kernel's AST, line numbers matching ``self.file``."""
        if self._ast is None:
            tree = ast.parse(self.src)
            ast.increment_lineno(tree, self.starting_line_number - 1)
            self._ast = tree
        return self._ast

    @property
    def cache_key(self) -> str:
        """Hash of the source, of the ``@jit`` functions it calls (transitively) and of the global values they
        read; stable across machines (no absolute paths)."""
        if self._cache_key is None:
            used: list = []
            self._cache_key = self._compute_cache_key({}, used)
            self.used_global_vals = used
        return self._cache_key

    def _compute_cache_key(self, seen: dict, used: list) -> str:
        if id(self) in seen:  # recursion: the key of a function being hashed is its name
            return f"<recursive {self.__qualname__}>"
        seen[id(self)] = self
        deps, own = _scan_dependencies(self)
        h = hashlib.sha256(self.src.encode())
        h.update(repr((self.noinline, self.debug, self.starting_line_number,
                       self.file.replace("\\", "/").rsplit("/", 1)[-1])).encode())
        for label, val, _ in own:
            h.update(f"\0{label}={type(val).__name__}:{val!r}".encode())
        used.extend(own)
        for label, dep in deps:
            h.update(f"\0{label}:{dep._compute_cache_key(seen, used)}".encode())
        return h.hexdigest()

    def check_globals(self) -> None:
        """Raise ``RuntimeError`` if a global value this kernel (or a callee) was compiled with has changed."""
        if self.used_global_vals is None:
            self.cache_key
        for label, val, get in self.used_global_vals:
            new = get()
            if new is not val and not _same_value(new, val):
                shown = "<deleted>" if new is _MISSING else repr(new)
                raise RuntimeError(f"Global variable {label} has changed since kernel '{self.__name__}' was "
                                   f"compiled, from {val!r} to {shown}: make it a tl.constexpr argument, or do "
                                   f"not modify it after the first launch")

    # -------------------------------------------------------------------------------------- launching
    def add_pre_run_hook(self, hook: Callable) -> None:
        """``hook(*args, **kwargs)`` runs before every launch."""
        self.pre_run_hooks.append(hook)

    @property
    def binder(self) -> Binder:
        if self._binder is None:
            self._binder = Binder(self)
        return self._binder

    def __getitem__(self, grid) -> Callable:
        """``fn[grid]``: ``partial(launch, grid)`` of the generated grid launcher (:func:`_make_grid_launcher`),
        which takes the relaunch fast path without forwarding the arguments through ``run``."""
        gl = self._grid_launcher
        if gl is None:
            gl = self._grid_launcher = _make_grid_launcher(self)
        if gl is False:
            return super().__getitem__(grid)
        return functools.partial(gl, grid)

    def _device_key(self, driver) -> tuple:
        sel = driver.select()
        return (sel.name, sel.arch, driver.active.get_current_device())

    def run(self, *args, grid=None, warmup=False, **kwargs):
        """Bind, specialise, compile on a cache miss, and launch over ``grid`` (unless ``warmup``)."""
        if self.pre_run_hooks:
            for hook in self.pre_run_hooks:
                hook(*args, **kwargs)
        used = self.used_global_vals
        if used:
            if not self._globals_unchanged():
                self.check_globals()
        elif used is None:
            self.cache_key
        if self.debug is not None and "debug" not in kwargs:
            kwargs["debug"] = self.debug
        cache = self.cache
        if type(cache) is not _KernelCache:  # someone assigned a plain dict
            self.cache = cache = _KernelCache(cache)
        # fast path: generated binder -> descriptor tuple -> (kernel, runtime arguments, bound launch function)
        fkey = None
        if not warmup:
            fb = self._fast_binder
            if fb is None:
                fb = self._fast_binder = _make_fast_binder(self)
            if fb is not False:
                try:
                    fkey, vals, opts = fb(*args, **kwargs)
                except Exception:  # noqa: BLE001 - anything odd: the general binder explains it
                    fkey = None
                else:
                    name, arch, drv, get_dev = _launch_context()
                    fast = cache.fast.get((name, arch, get_dev(), fkey))
                    if fast is not None and fast[3] is drv:
                        kernel = fast[0]
                        if type(grid) is tuple and len(grid) == 1 and type(grid[0]) is int:
                            g = (grid[0], 1, 1)
                        elif callable(grid):
                            g = _normalize_grid(self.__name__, grid, {**opts, **dict(zip(self.arg_names, vals))})
                        elif grid is None:
                            raise TypeError(f"kernel '{self.__name__}' launched without a grid: use "
                                            f"{self.__name__}[grid](...)")
                        else:
                            g = _normalize_grid(self.__name__, grid, None)
                        if g[0] and g[1] and g[2]:
                            hooks = _launch_hooks()
                            if hooks is None:
                                fast[2](g, fast[1](vals))
                            else:
                                args = list(fast[1](vals))
                                hooks[0](kernel=kernel, grid=g, args=args)
                                try:
                                    fast[2](g, args)
                                finally:
                                    hooks[1](kernel=kernel)
                        return kernel
        from . import driver

        name, arch, drv, get_dev = _launch_context()
        dev_key = (name, arch, get_dev())
        bound = self.binder.bind(args, kwargs, warmup=warmup)
        opt_key = tuple(sorted((k, _opt_key(v)) for k, v in bound.options.items()))
        per_device = cache.setdefault(dev_key, {})
        key = (bound.key, opt_key)
        kernel = per_device.get(key)
        if kernel is None:
            kernel = self._compile(bound, driver)
            per_device[key] = kernel
        if warmup:
            return kernel
        if grid is None:
            raise TypeError(f"kernel '{self.__name__}' launched without a grid: use {self.__name__}[grid](...)")
        g = _normalize_grid(self.__name__, grid, {**bound.options, **bound.values})
        if g[0] * g[1] * g[2]:
            driver.launch(kernel, g, bound.runtime_args)  # checks the backend's deps and device
        if fkey is not None:  # launched once: later launches with these descriptors take the fast path
            sig = bound.signature
            pos = tuple(i for i, n in enumerate(self.arg_names) if n in sig)
            ldrv, fn = driver.bound_launch(kernel, dev_key[2])
            if ldrv is drv:
                cache.fast[(*dev_key, fkey)] = (kernel, _arg_getter(pos), fn, drv)
        return kernel

    def _globals_unchanged(self) -> bool:
        """True when every recorded global is still the very object the kernel was compiled with (one generated
        expression); anything else goes through :meth:`check_globals`."""
        chk = self._globals_check
        if chk is None or chk[0] is not self.used_global_vals:
            used = self.used_global_vals
            ns = {f"_g{i}": get for i, (_, _, get) in enumerate(used)}
            ns.update({f"_v{i}": val for i, (_, val, _) in enumerate(used)})
            expr = " and ".join(f"_g{i}() is _v{i}" for i in range(len(used))) or "True"
            fn = eval(compile(f"lambda: {expr}", f"<tritium globals check for {self.__name__}>", "eval"), ns)  # noqa: S307
            chk = self._globals_check = (used, fn)
        return chk[1]()

    def _compile(self, bound, driver):
        from ..compiler import ASTSource, compile, options_to_dict

        target = driver.active.get_current_target()
        compiler = driver.get_compiler(target.backend)
        try:
            opts = compiler.parse_options(dict(bound.options))
        except TypeError as e:
            raise TypeError(f"kernel '{self.__name__}': {e}") from None
        known = options_to_dict(opts)
        for k in bound.options:
            if k not in known:
                raise TypeError(f"kernel '{self.__name__}' got an unexpected keyword argument '{k}' "
                                f"(not a parameter, nor an option of the '{target.backend}' backend)")
        for name, v in bound.constexprs.items():
            if callable(v) and not isinstance(v, JITFunction):
                raise TypeError(f"kernel '{self.__name__}': callable constexpr '{name}' is not supported")
        src = ASTSource(self, bound.signature, bound.constexprs, bound.attrs)
        self.compile_count += 1
        return compile(src, target=target, options=dict(bound.options))

    def warmup(self, *args, grid=None, **kwargs):
        """Compile for these arguments (values, or type strings like ``"*fp32"``) without launching."""
        return self.run(*args, grid=grid, warmup=True, **kwargs)

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"'{self.__name__}' is a @jit function: call it inside another @jit function, "
                           f"or launch it with {self.__name__}[grid](...)")

    def __repr__(self) -> str:
        return f"JITFunction({self.__module__}:{self.__qualname__})"


def _launch_context():
    from .driver import launch_context

    global _launch_context
    _launch_context = launch_context
    return launch_context()


def _launch_hooks():
    from .driver import launch_hooks

    global _launch_hooks
    _launch_hooks = launch_hooks
    return launch_hooks()


def _arg_getter(pos: tuple) -> Callable:
    """``values -> runtime arguments`` (a tuple) for the positions ``pos``."""
    if len(pos) >= 2:
        return operator.itemgetter(*pos)
    if len(pos) == 1:
        i = pos[0]
        return lambda vals: (vals[i],)
    return lambda vals: ()


class _KernelCache(dict):
    """``device key -> specialisation key -> CompiledKernel``, plus ``fast``: ``(*device key, descriptor tuple) ->
    (kernel, runtime arguments getter, bound launch function, driver)`` for the launch fast path.  ``clear()``
    clears both."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.fast: dict = {}

    def clear(self) -> None:
        super().clear()
        self.fast.clear()


_MISSING = object()


def _same_value(a: Any, b: Any) -> bool:
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # noqa: BLE001
        return False


# ------------------------------------------------------------------------------------------ dependencies
_LIB_MODULES = ("tritium", "triton", "math", "numpy", "builtins", "torch")


def _is_simple_global(v: Any) -> bool:
    """A value the frontend reads from a global as a compile-time constant (``_check_global`` in codegen)."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return True
    if isinstance(v, tuple):
        return all(_is_simple_global(x) for x in v)
    return _is_constexpr_value(v)


def _local_names(fdef: ast.AST) -> set:
    names = set()
    a = fdef.args
    for arg in a.posonlyargs + a.args + a.kwonlyargs + [x for x in (a.vararg, a.kwarg) if x]:
        names.add(arg.arg)
    for n in ast.walk(fdef):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            names.add(n.id)
        elif isinstance(n, ast.arg):
            names.add(n.arg)
    return names


def _scan_dependencies(fn: "JITFunction") -> tuple:
    """``(deps, used)`` of ``fn``, resolving names as the frontend does (closure cells, then module globals):
    ``deps`` = ``[(label, JITFunction)]`` it calls or references, ``used`` = ``[(label, value, getter)]`` of the
    scalar / constexpr globals it reads (``getter()`` returns the current value or ``_MISSING``)."""
    tree = fn.parse()
    fdef = tree.body[0] if tree.body else tree
    local = _local_names(fdef)
    code = getattr(fn.fn, "__code__", None)
    cells = dict(zip(code.co_freevars, fn.fn.__closure__ or ())) if code is not None else {}
    g = fn.__globals__
    deps, used, seen = {}, {}, set()

    def resolve(name):
        cell = cells.get(name)
        if cell is not None:
            try:
                v = cell.cell_contents
            except ValueError:
                return _MISSING, None

            def get(cell=cell):
                try:
                    return cell.cell_contents
                except ValueError:
                    return _MISSING
            return v, get
        if name in g:
            return g[name], (lambda name=name: g.get(name, _MISSING))
        return _MISSING, None

    for node in ast.walk(fdef):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            chain = []
            cur = node
            while isinstance(cur, ast.Attribute):
                chain.append(cur.attr)
                cur = cur.value
            if not isinstance(cur, ast.Name) or cur.id in local or id(node) in seen:
                continue
            for sub in ast.walk(node):
                seen.add(id(sub))
            v, get = resolve(cur.id)
            if v is _MISSING or not isinstance(v, types.ModuleType):
                continue
            root = v.__name__.split(".")[0]
            label = cur.id
            for attr in reversed(chain):
                if not isinstance(v, types.ModuleType):
                    break
                v = getattr(v, attr, _MISSING)
                label = f"{label}.{attr}"
                if v is _MISSING:
                    break
                if isinstance(v, JITFunction):
                    deps[label] = v
                    break
                if root not in _LIB_MODULES and _is_simple_global(v):
                    path = label.split(".")

                    def get_attr(get=get, path=path):
                        o = get()
                        for a in path[1:]:
                            o = getattr(o, a, _MISSING)
                            if o is _MISSING:
                                break
                        return o
                    used[label] = (v, get_attr)
                    break
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and id(node) not in seen:
            if node.id in local:
                continue
            v, get = resolve(node.id)
            if v is _MISSING:
                continue
            if isinstance(v, JITFunction):
                deps[node.id] = v
            elif _is_simple_global(v):
                used[node.id] = (v, get)
    return sorted(deps.items()), [(k, v, get) for k, (v, get) in sorted(used.items())]


# ------------------------------------------------------------------------------------------ fast binder
_TYPE_STRINGS: dict = {}  # dtype object -> "*fp32"
#: types seen with ``dtype`` and a ``data_ptr()`` method (torch.Tensor, its subclasses, look-alikes): a generated
#: binder's descriptor for them is ``(dtype, aligned)``, computed inline
_DATA_PTR_TYPES: set = set()


def _ptr_type(dtype: Any) -> str:
    ty = _TYPE_STRINGS.get(dtype)
    if ty is None:
        from .binder import _dtype_type_string

        ty = _TYPE_STRINGS[dtype] = "*" + _dtype_type_string(dtype)
    return ty


def _make_spec(binder: Binder, name: str, specialize: bool, align: bool) -> Callable:
    """A function ``value -> hashable descriptor`` that determines what the general binder makes of the value
    (type string, specialisation, constexpr-ness), fast for ints, floats, numpy arrays and torch tensors."""
    general = binder._specialize

    def spec(v):
        t = type(v)
        if t is int:
            if -0x80000000 <= v <= 0x7FFFFFFF:
                ty = "i32"
            elif -0x8000000000000000 <= v <= 0x7FFFFFFFFFFFFFFF:
                ty = "i64"
            else:
                ty = "u64"
            if not specialize:
                return ty
            return "1" if v == 1 else (ty, "D") if v % DIVISIBILITY == 0 else ty
        if t is float:
            return "fp32"
        if t is bool:
            return "i1"
        if v is None:
            return "N"
        dt = getattr(v, "dtype", None)
        if dt is not None:
            dp = getattr(v, "data_ptr", None)
            if dp is not None:
                addr = dp()
                _ptr_type(dt)  # an unsupported dtype raises: the general binder explains it
                _DATA_PTR_TYPES.add(t)  # generated binders compute this type's descriptor inline, the same
                return (dt, align and addr % DIVISIBILITY == 0)
            if t.__name__ == "ndarray":
                addr = v.__array_interface__["data"][0]
                _ptr_type(dt)
                return (dt, align and addr % DIVISIBILITY == 0)
            return ("g", general(name, v, False))
        if _is_constexpr_value(v):
            u = unwrap_constexpr(v)
            return ("c", type(u), u)
        return ("g", general(name, v, False))

    return spec


_NDARRAY_READER: Any = None  # (numpy.ndarray, c_void_p.from_address, data field offset), or False


def _ndarray_reader() -> Any:
    """``(ndarray, read, off)`` such that ``read(id(a) + off).value`` is the data address of an exact
    ``numpy.ndarray`` ``a`` (PyArrayObject's ``data`` field right after the object header, which
    ``PyArray_DATA`` reads): ~0.3 µs where ``__array_interface__`` takes ~2 µs.  Checked against
    ``__array_interface__`` on sample arrays once; ``False`` (generated binders then use :func:`_make_spec`)
    when numpy is not imported, on another implementation than CPython, or if the check fails."""
    global _NDARRAY_READER
    if _NDARRAY_READER is not None:
        return _NDARRAY_READER
    import sys

    np = sys.modules.get("numpy")
    if np is None:
        return False  # not cached: numpy may be imported later
    res: Any = False
    try:
        if sys.implementation.name == "cpython":
            import ctypes

            read, off = ctypes.c_void_p.from_address, object.__basicsize__
            base = np.arange(64, dtype=np.int16)
            samples = [base, base[3:], base[1::2], np.zeros((3, 5))[:, 1], np.empty(0, np.float32)]
            if all(read(id(a) + off).value == a.__array_interface__["data"][0] for a in samples):
                res = (np.ndarray, read, off)
    except Exception:  # noqa: BLE001 - no fast path then
        res = False
    _NDARRAY_READER = res
    return res


def _const_spec(v: Any) -> Any:
    t = type(v)
    if t is int or t is str or t is bool or t is float or v is None:
        return (t, v)
    u = unwrap_constexpr(v)
    hash(u)
    return (type(u), u)


def _binder_parts(fn: "JITFunction") -> Any:
    """``(namespace, descriptor statements, descriptor expressions)`` shared by the generated binder and the
    generated grid launcher (same code, so the same descriptors); ``False`` when the signature does not allow
    them.

    A descriptor determines what the general binder makes of the argument (type string, specialisation,
    constexpr-ness); tensors (``(dtype, aligned)``, for the types in ``_DATA_PTR_TYPES``: torch.Tensor, and what
    :func:`_make_spec` saw with ``dtype`` and ``data_ptr()``), numpy arrays (the same, their address read by
    :func:`_ndarray_reader`), ints in the i32 range and int constexprs are computed inline, anything else by a
    per-parameter function (:func:`_make_spec`)."""
    import sys

    params = list(fn.signature.parameters.values())
    if any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params):
        return False
    names = [p.name for p in params]
    if any(n.startswith("_tr_") or not n.isidentifier() for n in names):
        return False
    binder = fn.binder
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(getattr(torch, "Tensor", None), type):
        _DATA_PTR_TYPES.add(torch.Tensor)
    ns: dict = {"_tr_const": _const_spec, "_tr_P": _DATA_PTR_TYPES}
    nd = _ndarray_reader()
    if nd:
        ns["_tr_nd"], ns["_tr_rd"], ns["_tr_off"] = nd
    body, descs = [], []
    for i, p in enumerate(fn.params):
        n = p.name
        if p.has_default:
            ns[f"_tr_d{i}"] = p.default
        if p.is_constexpr:
            descs.append(f"({n} if type({n}) is int else _tr_const({n}))")
            continue
        dns = n in fn.do_not_specialize
        align = not dns and n not in fn.do_not_specialize_on_alignment
        ns[f"_tr_s{i}"] = _make_spec(binder, n, not dns, align)
        tensor = f"({n}.dtype, not {n}.data_ptr() & {DIVISIBILITY - 1})" if align else f"({n}.dtype, False)"
        small = f"(1 if {n} == 1 else 2 if not {n} & {DIVISIBILITY - 1} else 3)" if not dns else "4"
        # numpy arrays: the descriptor _make_spec gives them, with the data address read directly
        array = (f"    elif _tr_t is _tr_nd:\n"
                 f"        _tr_k{i} = ({n}.dtype, " +
                 (f"not _tr_rd(id({n}) + _tr_off).value & {DIVISIBILITY - 1})\n" if align else "False)\n")
                 if nd else "")
        body.append(f"    _tr_t = type({n})\n"
                    f"    if _tr_t in _tr_P:\n"
                    f"        _tr_k{i} = {tensor}\n"
                    f"    elif _tr_t is int and -0x80000000 <= {n} <= 0x7FFFFFFF:\n"
                    f"        _tr_k{i} = {small}\n"
                    f"{array}"
                    f"    else:\n"
                    f"        _tr_k{i} = _tr_s{i}({n})\n")
        descs.append(f"_tr_k{i}")
    return ns, "".join(body), descs


def _make_fast_binder(fn: "JITFunction") -> Any:
    """Generate ``bind(<the kernel's parameters>, **options) -> (descriptor tuple, values, options)`` for ``fn``,
    as Triton generates a binder per kernel (see :func:`_binder_parts`); ``False`` when the signature does not
    allow it."""
    parts = _binder_parts(fn)
    if parts is False:
        return False
    ns, body, descs = parts
    names = [p.name for p in fn.params]
    sig = [f"{p.name}=_tr_d{i}" if p.has_default else p.name for i, p in enumerate(fn.params)]
    src = (f"def _tr_bind({', '.join(sig + ['**_tr_opts'])}):\n" + body +
           f"    return ({''.join(d + ', ' for d in descs)}tuple(_tr_opts.items()) if _tr_opts else ()), "
           f"({''.join(n + ', ' for n in names)}), _tr_opts\n")
    exec(compile(src, f"<tritium binder for {fn.__name__}>", "exec"), ns)  # noqa: S102 - our own generated code
    bind = ns["_tr_bind"]
    bind.source = src
    return bind


_M = object()  # "not given" in a generated grid launcher


def _make_grid_launcher(fn: "JITFunction") -> Any:
    """Generate ``launch(grid, *args, **kwargs)`` for ``fn[grid](*args, **kwargs)``: the relaunch fast path of
    :meth:`JITFunction.run` without its argument forwarding (``fn[grid]`` is ``partial(launch, grid)``).

    The parameters are positional-only with a "not given" default, so binding never fails in Python: keyword
    arguments are matched by name in the generated code, and anything unusual -- a missing or doubly given
    argument, extra positional arguments, pre-run hooks, ``debug``, a descriptor that cannot be computed, a
    cache miss, a grid that is not ``(int,)`` -- calls ``fn.run(*args, grid=grid, warmup=False, **kwargs)``
    with the arguments exactly as given (same errors, same behaviour).  ``False`` when the signature does not
    allow it."""
    parts = _binder_parts(fn)
    if parts is False:
        return False
    ns, body, descs = parts
    names = [p.name for p in fn.params]
    ns.update({"_M": _M, "_tr_fn": fn, "_tr_KC": _KernelCache, "_tr_slow": _grid_launch_slow_fn(fn),
               "_tr_ctx": _launch_context_fn(), "_tr_hooks": _launch_hooks_fn(), "_tr_full": _grid_launch_full})
    given = f"({''.join(n + ', ' for n in names)})"
    slow = f"return _tr_slow(_tr_grid, {given}, _tr_extra, _tr_kw)"
    raw = f"return _tr_slow(_tr_grid, {given}, _tr_extra, _tr_kw, True)"
    lines = [f"def _tr_launch(_tr_grid, {', '.join(n + '=_M' for n in names)}{', ' if names else ''}/, "
             f"*_tr_extra, **_tr_kw):",
             "    _tr_f = _tr_fn",
             "    if _tr_extra or _tr_f.pre_run_hooks or _tr_f.debug is not None or _tr_f.used_global_vals is None "
             "or type(_tr_f.cache) is not _tr_KC:",
             f"        {raw}",
             "    if _tr_kw:",
             "        _tr_o = _tr_kw.copy()"]
    for n in names:
        lines += [f"        _tr_v = _tr_o.pop({n!r}, _M)",
                  "        if _tr_v is not _M:",
                  f"            if {n} is not _M:",
                  f"                {raw}",
                  f"            {n} = _tr_v"]
    lines += ["    else:", "        _tr_o = _tr_kw"]
    required = [p.name for p in fn.params if not p.has_default]
    if required:
        lines += [f"    if {' or '.join(n + ' is _M' for n in required)}:", f"        {slow}"]
    for i, p in enumerate(fn.params):
        if p.has_default:
            lines += [f"    if {p.name} is _M:", f"        {p.name} = _tr_d{i}"]
    lines += ["    if _tr_f.used_global_vals and not _tr_f._globals_unchanged():",
              "        _tr_f.check_globals()",
              "    try:"]
    lines += ["    " + ln for ln in body.splitlines()]
    lines += [f"        _tr_key = ({''.join(d + ', ' for d in descs)}tuple(_tr_o.items()) if _tr_o else ())",
              "        _tr_name, _tr_arch, _tr_drv, _tr_dev = _tr_ctx()",
              "        _tr_e = _tr_f.cache.fast.get((_tr_name, _tr_arch, _tr_dev(), _tr_key))",
              "    except Exception:  # the general binder explains it",
              f"        {slow}",
              "    if _tr_e is None or _tr_e[3] is not _tr_drv:",
              f"        {slow}",
              "    if type(_tr_grid) is tuple and len(_tr_grid) == 1 and type(_tr_grid[0]) is int:",
              "        if _tr_grid[0]:",
              "            if _tr_hooks() is None:",
              f"                _tr_e[2]((_tr_grid[0], 1, 1), _tr_e[1]({given}))",
              "            else:",
              f"                _tr_full(_tr_f, _tr_e, _tr_grid, {given}, _tr_o)",
              "        return _tr_e[0]",
              f"    return _tr_full(_tr_f, _tr_e, _tr_grid, {given}, _tr_o)",
              ""]
    src = "\n".join(lines)
    exec(compile(src, f"<tritium grid launcher for {fn.__name__}>", "exec"), ns)  # noqa: S102 - our own code
    launch = ns["_tr_launch"]
    launch.source = src
    return launch


def _grid_launch_slow_fn(fn: "JITFunction") -> Callable:
    """``slow(grid, given, extra, kwargs)``: ``fn.run`` with the arguments of a generated grid launcher as they
    were given.  ``given`` holds the parameters' current values (``_M``: not given): the positional arguments are
    the prefix of them not named in ``kwargs`` (a parameter filled from ``kwargs`` or its default may follow;
    passing a default positionally binds the same); ``raw``: no parameter was filled yet, the positional
    arguments are the given prefix (a parameter given both ways is then reported by ``run``)."""
    names = tuple(fn.arg_names)

    def slow(grid, given, extra, kwargs, raw=False):
        if extra:
            return fn.run(*given, *extra, grid=grid, warmup=False, **kwargs)
        k = 0
        for name, v in zip(names, given):
            if v is _M or (not raw and name in kwargs):
                break
            k += 1
        return fn.run(*given[:k], grid=grid, warmup=False, **kwargs)

    return slow


def _launch_context_fn() -> Callable:
    from .driver import launch_context

    return launch_context


def _launch_hooks_fn() -> Callable:
    from .driver import launch_hooks

    return launch_hooks


def _grid_launch_full(fn: "JITFunction", entry: tuple, grid: Any, vals: tuple, opts: dict) -> Any:
    """The rest of the fast path for a general grid (callable, 2-D/3-D, zero) or with launch hooks."""
    kernel = entry[0]
    if type(grid) is tuple and len(grid) == 1 and type(grid[0]) is int:
        g = (grid[0], 1, 1)
    elif callable(grid):
        g = _normalize_grid(fn.__name__, grid, {**opts, **dict(zip(fn.arg_names, vals))})
    elif grid is None:
        raise TypeError(f"kernel '{fn.__name__}' launched without a grid: use {fn.__name__}[grid](...)")
    else:
        g = _normalize_grid(fn.__name__, grid, None)
    if g[0] and g[1] and g[2]:
        hooks = _launch_hooks()
        if hooks is None:
            entry[2](g, entry[1](vals))
        else:
            args = list(entry[1](vals))
            hooks[0](kernel=kernel, grid=g, args=args)
            try:
                entry[2](g, args)
            finally:
                hooks[1](kernel=kernel)
    return kernel


def _opt_key(v: Any) -> Any:
    try:
        hash(v)
        return (type(v).__name__, v)
    except TypeError:
        return (type(v).__name__, repr(v))


def jit(fn: Optional[Callable] = None, *, version=None, repr=None, launch_metadata=None,
        do_not_specialize=(), do_not_specialize_on_alignment=(), debug=None, noinline=False):
    """Decorate a kernel (``@jit`` or ``@jit(...)``) exactly as ``triton.jit``."""

    def decorator(f):
        return JITFunction(f, do_not_specialize=do_not_specialize,
                           do_not_specialize_on_alignment=do_not_specialize_on_alignment,
                           noinline=noinline, debug=debug, repr=repr, launch_metadata=launch_metadata)

    return decorator(fn) if fn is not None else decorator
