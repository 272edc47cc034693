"""``compile()``: run a backend's stage pipeline over a source, keep every stage's output; ``CompiledKernel``.

Nothing here imports MLIR or llvmlite: the stages do, when they run.

Layering: ``compile()`` and ``CompiledKernel`` build on the plugins, the contracts (:mod:`.backend`), the backend
registry (:mod:`.registry`), the file cache (:mod:`.cache`) and the launch helper (:mod:`.launch`); nothing in
this package imports :mod:`tritium.runtime`, which builds on it.
"""
from __future__ import annotations

import functools
import hashlib
import json
import marshal
import types
from typing import Any, NamedTuple, Optional, Sequence, Union

from .. import plugins
from ..errors import BackendUnavailable, StageNotImplemented, TritiumError  # noqa: F401
from . import cache as _fcache
from . import registry
from . import remote_cache as _remote
from .backend import BaseCompiler, BaseOptions, GPUTarget, bind_stages
from .cache import jsonable
from .ir_source import IRSource, is_ir_path
from .launch import Subscript, launch as _launch


class AttrDict(dict):
    """A dict whose keys are also attributes (``kernel.metadata.num_warps``, like Triton's namedtuple)."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def options_to_dict(options: Any) -> dict:
    """A backend's options object as a plain dict (dataclass, ``to_dict()``, ``__dict__`` or dict)."""
    if options is None:
        return {}
    if isinstance(options, dict):
        return dict(options)
    if hasattr(options, "to_dict"):
        return dict(options.to_dict())
    import dataclasses

    if dataclasses.is_dataclass(options):
        return {f.name: getattr(options, f.name) for f in dataclasses.fields(options)}
    return dict(vars(options))


def _value_key(v: Any) -> str:
    """A stable text for a constexpr value (type-tagged, so 1, 1.0 and True differ).  A function (a callable
    passed as a constexpr, e.g. ``tl.extra.cuda.globaltimer``) is keyed by its name and, outside tritium (whose
    own code the cache key hashes already), by its code and the values it closes over, never by its address."""
    if isinstance(v, (types.FunctionType, types.BuiltinFunctionType, functools.partial)):
        return _function_key(v)
    return f"{type(v).__name__}:{v!r}"


def _function_key(f: Any) -> str:
    if isinstance(f, functools.partial):
        return (f"partial:{_function_key(f.func)}({','.join(_value_key(a) for a in f.args)};"
                f"{','.join(f'{k}={_value_key(a)}' for k, a in sorted(f.keywords.items()))})")
    name = f"{getattr(f, '__module__', '')}.{getattr(f, '__qualname__', getattr(f, '__name__', '?'))}"
    code = getattr(f, "__code__", None)
    if code is None or name.split(".")[0] in ("tritium", "tritium_nvidia", "tritium_amd", "tritium_interpreter"):
        return f"function:{name}"
    cells = []
    for c in f.__closure__ or ():
        try:
            cells.append("<self>" if c.cell_contents is f else _value_key(c.cell_contents))
        except ValueError:  # an empty cell
            cells.append("<empty>")
    digest = hashlib.sha256(marshal.dumps(code) + repr(cells).encode()).hexdigest()[:32]
    return f"function:{name}:{digest}"


class ASTSource:
    """A ``@jit`` function specialised for a signature: what ``compile()`` turns into a kernel.

    ``signature``: ``{name: "*fp32" | "i32" | ...}`` for the non-constexpr parameters (a comma-separated string
    or a list is taken positionally); ``constexprs``: ``{name: value}``; ``attrs``: ``{name: {"tt.divisibility":
    16}}``.
    """

    ext = "ttir"

    def __init__(self, fn: Any, signature: Union[dict, str, list, tuple], constexprs: Optional[dict] = None,
                 attrs: Optional[dict] = None):
        self.fn = fn
        self.name = getattr(fn, "__name__", "kernel")
        constexprs = dict(constexprs or {})
        if isinstance(signature, (str, list, tuple)):
            types = [t.strip() for t in signature.split(",")] if isinstance(signature, str) else list(signature)
            names = [p for p in getattr(fn, "arg_names", []) if p not in constexprs
                     and p not in set(getattr(fn, "constexpr_names", []))]
            if names and len(names) != len(types):
                raise TypeError(f"kernel '{self.name}': signature has {len(types)} types for {len(names)} "
                                f"non-constexpr parameters ({', '.join(names)})")
            signature = dict(zip(names, types)) if names else dict(enumerate(types))
        self.signature = dict(signature)
        self.constexprs = constexprs
        self.attrs = {k: dict(v) for k, v in (attrs or {}).items()}

    # Triton spells it ``constants``
    @property
    def constants(self) -> dict:
        return self.constexprs

    def hash(self) -> str:
        fn_key = getattr(self.fn, "cache_key", None) or getattr(self.fn, "src", None) or self.name
        key = json.dumps({
            "fn": fn_key,
            "signature": [[str(k), v] for k, v in self.signature.items()],
            "constexprs": sorted((str(k), _value_key(v) if not hasattr(v, "cache_key") else
                                  f"jit:{v.cache_key}") for k, v in self.constexprs.items()),
            "attrs": sorted((str(k), sorted(v.items())) for k, v in self.attrs.items()),
        }, sort_keys=True, default=repr)
        return hashlib.sha256(key.encode()).hexdigest()

    def __repr__(self) -> str:
        return f"ASTSource({self.name}, {self.signature}, constexprs={self.constexprs}, attrs={self.attrs})"


def signature_of(metadata: dict) -> list:
    """``[(name, type string)]`` of a kernel's runtime parameters, in order, from ``metadata["signature"]``: a
    list of ``[name, type]`` pairs (what ``compile()`` writes), or a ``{name: type}`` dict in parameter order
    (metadata written by hand, as Triton spells it).  Entries typed ``constexpr`` (Triton 3.3+'s signatures name
    the constexpr parameters too, as torch's Inductor writes them) are not runtime parameters."""
    sig = metadata.get("signature") or ()
    return [(str(n), str(t)) for n, t in (sig.items() if isinstance(sig, dict) else sig) if str(t) != "constexpr"]


class CompiledKernel(Subscript):
    """The result of ``compile()``: every stage's output in ``asm`` and JSON-serialisable ``metadata``.

    ``metadata["signature"]`` lists the runtime parameters in order as ``[name, type string]`` pairs
    (:attr:`signature`).  ``loaded`` holds what the kernel's driver loaded, per device (``{device: state}``,
    the contents are the driver's: a loaded module and launch function for cuda, a host program for the
    interpreter).
    """

    def __init__(self, asm: dict, metadata: dict, src: Any = None):
        self.asm = asm
        self.metadata = AttrDict(metadata)
        self.src = src
        self.name = metadata.get("name", "kernel")
        t = metadata.get("target") or {}
        self.target = GPUTarget(t.get("backend", ""), t.get("arch", 0), t.get("warp_size", 32))
        self.hash = metadata.get("hash", "")
        self.signature = signature_of(metadata)
        # GPU drivers fill these in when loading a binary (Triton's names).  Backends without registers or
        # shared memory (the interpreter) get plausible non-zero placeholders, so that the occupancy arithmetic
        # of Triton's tutorials (``NUM_REGS // (n_regs * ...)``, ``SIZE_SMEM // shared``) works unchanged.
        self.n_regs = metadata.get("n_regs", 32)
        self.n_spills = metadata.get("n_spills", 0)
        self.from_cache = False  # compile() loaded it from the file cache
        self.module = None
        self.function = None
        self.loaded: dict = {}
        self.bindings: dict = {}  # (driver, device) -> its Binding (compiler.launch.binding)
        self._c_grid_state = None  # kernel[grid] from C once launched on a device (compiler.launch._bind_c)

    @property
    def binary(self) -> Any:
        """The last stage's output."""
        return self.asm[next(reversed(self.asm))] if self.asm else None

    @property
    def kernel(self) -> Any:  # Triton spelling
        return self.binary

    @property
    def complete(self) -> bool:
        return bool(self.metadata.get("complete", True))

    def _init_handles(self) -> None:
        """Triton's name for loading the binary on the device: tritium's drivers load at the first launch.  A
        kernel rebuilt from a pickled ``__dict__`` with ``run`` / ``function`` / ``module`` set to None (torch's
        Inductor sends kernels from its compile workers so) gets its own ``run`` back."""
        for name in ("run", "launch_metadata"):
            if name in self.__dict__ and self.__dict__[name] is None:
                del self.__dict__[name]
        md = self.__dict__.get("metadata")
        if md is not None and not isinstance(md, dict) and hasattr(md, "_asdict"):  # Inductor's namedtuple of it
            self.metadata = AttrDict(md._asdict())

    # Triton's launcher interface (what torch's Inductor calls): class-level hooks of Triton < 3.4, the packed
    # metadata, launch_metadata and run
    launch_enter_hook = None
    launch_exit_hook = None

    @property
    def packed_metadata(self) -> Any:
        return self.metadata

    @property
    def shared(self) -> int:
        return int(self.metadata.get("shared", 0) or 0)

    @property
    def num_warps(self) -> int:
        return int(self.metadata.get("num_warps", 4) or 4)

    def launch_metadata(self, grid: Any, stream: Any, *args) -> dict:
        """What a launch-enter hook receives: the kernel's name, metadata, grid, stream and arguments."""
        return {"name": self.name, "function": self.function, "stream": stream, "grid": tuple(grid),
                "metadata": self.metadata, "args": args}

    def run(self, grid_0: int, grid_1: int, grid_2: int, stream: Any, function: Any, packed_metadata: Any,
            launch_metadata: Any, launch_enter_hook: Any, launch_exit_hook: Any, *args) -> None:
        """Triton's ``CompiledKernel.run``: launch over ``(grid_0, grid_1, grid_2)`` with ``args`` (constexpr
        values among them are dropped), calling the hooks around it with ``launch_metadata`` when given.  The
        launch goes to the current stream of the kernel's device (``stream`` is the one callers get from it)."""
        if launch_enter_hook is not None and launch_metadata is not None:
            launch_enter_hook(launch_metadata)
        self.launch((grid_0, grid_1, grid_2), *args)
        if launch_exit_hook is not None and launch_metadata is not None:
            launch_exit_hook(launch_metadata)

    def launch(self, grid: Any, *args) -> None:
        """Launch with runtime ``args`` (non-constexpr parameters in order) over ``grid``."""
        g = grid if type(grid) is tuple else tuple(grid)
        if len(g) != 3:
            g = g + (1,) * (3 - len(g))
        _launch(self, g, args if len(args) == len(self.signature) else self.runtime_args(args))

    def runtime_args(self, args: Sequence) -> list:
        """``args`` as the driver wants them: the runtime ones.  Like Triton's launcher, a call that passes every
        parameter (constexprs included, as Triton's tutorials do) is filtered down to the signature's."""
        args = list(args)
        names = self.metadata.get("arg_names") or []
        if names and len(args) == len(names) and len(names) != len(self.signature):
            runtime = {n for n, _ in self.signature}
            args = [a for n, a in zip(names, args) if n in runtime]
        return args

    def _subscript(self, grid: Any):
        """``kernel[grid]``: once launched on a device, a ``tritium._speedups.GridLaunch`` of ``_c_grid_state``
        instead (compiler.launch._bind_c), whose call takes the C path or this launch."""
        return functools.partial(self.launch, grid)

    def to_json(self) -> str:
        return json.dumps(self.metadata, sort_keys=True)

    def __repr__(self) -> str:
        return f"CompiledKernel({self.name}, target={self.target}, stages={list(self.asm)})"


_COMPILER_DEPS = {"mlir": "the MLIR Python bindings (xtc-mlir-python-bindings)", "llvmlite": "llvmlite"}


def _missing_compiler_dependency(e: ModuleNotFoundError, kernel: str, target, stage: str, fcache) -> None:
    """A stage needs MLIR or llvmlite and this Python lacks them (a machine that only runs kernels from a
    carried cache, and this one was not in it): say so, with what to do, instead of a bare import error."""
    top = (e.name or "").split(".")[0]
    if top not in _COMPILER_DEPS:
        return
    where = f"the cache {fcache.dir}" if fcache is not None else "the file cache (disabled)"
    raise BackendUnavailable(
        f"compiling kernel '{kernel}' for {target} (stage '{stage}') needs {_COMPILER_DEPS[top]}, which is not "
        f"installed here: pip install tritium (it depends on them), or compile the kernel on a machine that has "
        f"them into a cache directory and set TRITIUM_CACHE_DIR to it here (it was not found in {where})") from e


def _relocate(asm: dict, md: dict, src: Any) -> tuple:
    """A cached kernel's stages as the kernel being compiled would have them: the file cache's key names a kernel
    file by its base name only (entries are shareable between directories and machines), so an entry stored from
    ``/a/k.py`` serves an identical ``/b/k.py``, and its source locations (``loc("/a/k.py":7:4)`` in the IR, the
    interpreter program's error locations) name ``/a``.  The metadata lists the files the locations name
    (``source_files``: the kernel's and its callees', in a fixed order); where the kernel compiled now has files
    of the same base names elsewhere, the texts name those.  The entry itself is left as it is."""
    old = md.get("source_files") or []
    new = list(getattr(getattr(src, "fn", None), "source_files", None) or [])
    if not old or len(old) != len(new):
        return asm, md
    pairs = [(o, n) for o, n in zip(old, new)
             if o != n and o.replace("\\", "/").rsplit("/", 1)[-1] == n.replace("\\", "/").rsplit("/", 1)[-1]]
    if not pairs:
        return asm, md

    def moved(text: str) -> str:
        for o, n in pairs:
            text = text.replace(json.dumps(o), json.dumps(n)).replace(repr(o), repr(n))
        return text

    return ({k: moved(v) if isinstance(v, str) else v for k, v in asm.items()}, {**md, "source_files": new})


class Pipeline(NamedTuple):
    """What compiling for one target with one set of options runs: the backend's compiler, the parsed options
    and the stage dict (``name -> fn(src, metadata)``, amended by the plugins)."""

    target: GPUTarget
    compiler: BaseCompiler
    options: BaseOptions
    stages: dict


def make_pipeline(target: Any = None, options: Union[None, dict, BaseOptions] = None) -> Pipeline:
    """The :class:`Pipeline` for ``target`` (a GPUTarget or ``"cuda:90"``; default: the active backend's current
    target).  ``options``: a dict (parsed here by the backend's ``parse_options``) or the options object a
    ``parse_options`` returned (used as it is: callers that parsed to validate do not parse twice)."""
    if target is None:
        target = registry.current_target()
    elif not isinstance(target, GPUTarget):
        target = registry.target_from_spec(target)
    target = registry.canonical_target(target)
    compiler = registry.get_compiler(target.backend)
    if not compiler.supports_target(target):
        raise TritiumError(f"the '{target.backend}' backend does not support target {target}")
    compiler.check_target(target)
    opts = options if isinstance(options, BaseOptions) else compiler.parse_options(dict(options or {}))
    opts = compiler.options_for_target(opts, target)
    stages: dict = {}
    bind_stages(compiler, stages, opts, target)
    plugins.get_plugin_manager().hook.tritium_add_stages(stages=stages, options=opts, backend_name=target.backend)
    return Pipeline(target, compiler, opts, stages)


def _remote_hit(key: str, fcache) -> Optional[tuple]:
    """A complete kernel from the remote cache (verified there), written into the local cache; None on a miss."""
    remote = _remote.get_remote_cache()
    hit = remote.get(key) if remote is not None else None
    if hit is None or not hit[1].get("complete", False):
        return None
    try:
        fcache.put(key, *hit)
    except OSError:
        pass  # a read-only local cache: the kernel still loads from what the remote store gave
    return hit


def compile(src: Any, target: Any = None, options: Union[None, dict, BaseOptions] = None,
            until: Optional[str] = None, use_cache: bool = True) -> CompiledKernel:
    """Compile ``src`` (an :class:`ASTSource`) for ``target`` (a GPUTarget or ``"cuda:90"``; default: the active
    backend's current target) with ``options`` (a dict, or the backend's parsed options object).

    Builds the backend's stage dict (:func:`make_pipeline`: ``backend.compiler.add_stages(stages, options, target)``,
    then the ``tritium_add_stages`` hook), then runs the stages in order: the first gets ``src``, each next one
    the previous output.  A ``tritium_override_stage`` hook may substitute an output (its stage is then listed in
    ``metadata["overridden"]``).  Every output is kept in ``asm[stage]`` and shown to the ``tritium_stage_output``
    hook.  ``until`` stops after that stage (the kernel is then incomplete: ``metadata["complete"]`` is False).

    The file cache (:mod:`tritium.compiler.cache`) is consulted first under ``metadata["hash"]``: a valid entry
    with the stages asked for is returned without running any stage (``kernel.from_cache``); a fresh result is
    stored unless a stage was overridden.  ``use_cache=False`` or ``TRITIUM_DISABLE_CACHE=1`` bypass it.
    """
    if is_ir_path(src):
        src = IRSource(src)
    if isinstance(src, IRSource):  # the module fixes some options (ttg.num-warps); the caller's win
        options = options if isinstance(options, BaseOptions) else {**src.parse_options(), **dict(options or {})}
    target, compiler, opts, stages = make_pipeline(target, options)
    first = 0
    if isinstance(src, IRSource):
        if src.ext not in stages:
            raise StageNotImplemented(f"{src.path}: the '{target.backend}' backend has no stage '{src.ext}' to "
                                      f"start from (its stages: {', '.join(stages)})")
        first = list(stages).index(src.ext)
    if until is not None and until not in stages:
        raise StageNotImplemented(f"the '{target.backend}' backend has no stage '{until}' "
                                  f"(its stages: {', '.join(stages)})")
    pm = plugins.get_plugin_manager()
    opts_dict = options_to_dict(opts)
    src_hash = src.hash() if hasattr(src, "hash") else hashlib.sha256(str(src).encode()).hexdigest()
    # the file cache: same key on every machine for the same kernel and target
    stage_plugins = tuple(i.plugin_name for i in pm.hook.tritium_add_stages.get_hookimpls())
    key = _fcache.compile_key(src_hash, target, compiler, opts_dict, list(stages), stage_plugins)
    fcache = None if (not use_cache or _fcache.disabled_reason()) else _fcache.get_file_cache()
    if fcache is not None:
        need = None if until is None else list(stages)[first:list(stages).index(until) + 1]
        hit = fcache.get(key, need)
        if hit is None and need is None:  # the remote layer (TRITIUM_REMOTE_CACHE), under the local one
            hit = _remote_hit(key, fcache)
        if hit is not None:
            _fcache.stats["hits"] += 1
            asm, md = hit
            if need is not None:
                asm = {k: v for k, v in asm.items() if k in need}
                md = {**md, "complete": list(asm) == list(stages)[first:]}
            asm, md = _relocate(asm, md, src)
            kernel = CompiledKernel(asm, md, src)
            kernel.from_cache = True
            _export_for_static_launch(kernel)
            return kernel
        _fcache.stats["misses"] += 1
    metadata: dict = {
        **{k: jsonable(v) for k, v in opts_dict.items()},
        "name": getattr(src, "name", "kernel"),
        "hash": key,
        "target": jsonable(target),
        "backend": target.backend,
        "options": jsonable(opts_dict),
        # runtime parameters in order: [[name, type], ...] (a JSON object's keys may come back sorted)
        "signature": [[str(n), str(t)] for n, t in (getattr(src, "signature", None) or {}).items()],
        "arg_names": list(getattr(getattr(src, "fn", None), "arg_names", []) or []),
        "constexprs": {str(k): repr(v) for k, v in (getattr(src, "constexprs", {}) or {}).items()},
        "attrs": jsonable(getattr(src, "attrs", {}) or {}),
        "stages": list(stages),
        "shared": 1024,  # placeholder; GPU stages set the real value
        # the files the stages' source locations name (see _relocate)
        "source_files": list(getattr(getattr(src, "fn", None), "source_files", None) or []),
    }
    asm: dict = {}
    cur = src
    if isinstance(src, IRSource):  # its own stage is the text; the stages after it run
        cur = asm[src.ext] = src.stage_text(target)
        metadata["signature"] = [[n, t] for n, t in src.signature.items()]
        metadata["arg_names"] = list(src.arg_names)
    for name, fn in list(stages.items())[first + (1 if isinstance(src, IRSource) else 0):]:
        try:
            cur = fn(cur, metadata)
        except ModuleNotFoundError as e:
            _missing_compiler_dependency(e, metadata["name"], target, name, fcache)
            raise
        # a plugin may substitute the output (irdump's TRITIUM_OVERRIDE_DIR); such a kernel is marked, and a
        # file cache must not store it under the compile key
        sub = pm.hook.tritium_override_stage(kernel_name=metadata["name"], stage=name, output=cur,
                                             metadata=metadata)
        if sub is not None:
            cur = sub
            metadata.setdefault("overridden", []).append(name)
        asm[name] = cur
        pm.hook.tritium_stage_output(kernel_name=metadata["name"], stage=name, output=cur, metadata=metadata)
        if name == until:
            break
    metadata["complete"] = list(asm) == list(stages)[first:]
    metadata = jsonable(metadata)  # whatever stages added, metadata stays JSON-serialisable
    if fcache is not None and not metadata.get("overridden"):
        try:
            fcache.put(key, asm, metadata)
        except OSError as e:  # a read-only or full cache costs a recompile next time, nothing more
            import warnings

            warnings.warn(f"tritium: could not write the kernel cache {fcache.dir}: {e}", RuntimeWarning)
        remote = _remote.get_remote_cache() if metadata["complete"] else None
        if remote is not None:  # write-through
            remote.put(key, asm, metadata)
    kernel = CompiledKernel(asm, metadata, src)
    kernel.from_cache = False
    _export_for_static_launch(kernel)
    return kernel


STATIC_LAUNCH_ENV = "TRITIUM_INDUCTOR_STATIC_LAUNCH"


def _export_for_static_launch(kernel: CompiledKernel) -> None:
    """``TRITIUM_INDUCTOR_STATIC_LAUNCH=1``: also put a CUDA kernel's cubin where Triton's cache keeps it,
    ``$TRITON_CACHE_DIR/<hash>/<name>.cubin`` (Inductor sets the directory before it compiles), where Inductor's
    static CUDA launcher looks for it: it then loads and launches the kernel itself from C++, as it does Triton's,
    instead of calling ``CompiledKernel.run`` for every launch.  tritium's kernels take Triton's parameters in
    Triton's order and types (tests/inductor/test_static_launch.py; Triton's two trailing scratch pointers are
    left out, extra parameters that ``cuLaunchKernel`` does not read), launch with ``cuLaunchKernel`` and dynamic
    shared memory as Triton's do, and say when they need more (``num_ctas``, cooperative launch), which the static
    launcher refuses.  Off by default until measured on a GPU; best effort (a file that cannot be written only
    leaves Inductor on ``CompiledKernel.run``)."""
    import os

    from .._env import env_flag

    if not env_flag(STATIC_LAUNCH_ENV):
        return
    directory = os.environ.get("TRITON_CACHE_DIR")
    cubin = kernel.asm.get("cubin")
    if not directory or not isinstance(cubin, bytes):
        return
    fn = getattr(kernel.src, "fn", None)
    name = getattr(fn, "__name__", None) or kernel.name
    path = os.path.join(directory, kernel.hash, f"{name}.cubin")
    if os.path.exists(path):
        return
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.tmp.{os.getpid()}"
        with open(tmp, "wb") as f:
            f.write(cubin)
        os.replace(tmp, path)  # whole or absent: a concurrent reader never sees part of it
    except OSError:
        pass


def make_backend(target: Any) -> BaseCompiler:
    """Triton's ``make_backend(target)``: the compiler of ``target``'s backend (``parse_options``, ``hash``, ...)."""
    target = target if isinstance(target, GPUTarget) else registry.target_from_spec(target)
    target = registry.canonical_target(target)
    compiler = registry.get_compiler(target.backend)
    if not compiler.supports_target(target):
        raise TritiumError(f"the '{target.backend}' backend does not support target {target}")
    compiler.check_target(target)
    return compiler


triton_key = _fcache.triton_key


__all__ = ["ASTSource", "CompiledKernel", "compile", "make_backend", "triton_key", "make_pipeline", "Pipeline", "signature_of",
           "StageNotImplemented", "AttrDict", "options_to_dict"]
