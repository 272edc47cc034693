/* tritium._speedups: what the JIT's generated launcher asks of every torch tensor argument, in one C call.
 *
 * Optional (built with the package where a C compiler is present; tritium.runtime.specialization falls back to
 * the same rule in Python without it).  On an H100 host the Python statements reading a tensor's data_ptr(),
 * get_device() and dtype cost ~0.45 us per tensor; from C the same three torch calls cost ~0.15 us.
 *
 *   tensor_info(t, align) -> (t.data_ptr(), t.get_device(), (t.dtype, align and data_ptr % 16 == 0))
 *
 * The descriptor (the third item) is the pointer rule of tritium.runtime.specialization._pointer_expr: the
 * element type and whether the address is 16-byte aligned (False when alignment is not specialised).  Any
 * exception of the torch calls propagates (the launcher then takes its general path).
 *
 *   relaunch(state, grid, v0, ..., v{n-1}) -> the CompiledKernel launched, or state[NOT_HANDLED]
 *
 * The JIT's relaunch fast path (tritium.runtime.launch.make_launcher) for the plain case, in C: every parameter's
 * value bound (defaults filled), no options, a grid (g,), a torch tensor or an int for every runtime parameter and
 * an int for every constexpr, no pre-run hooks / debug / used globals / launch hooks, and a fast entry for the
 * key, whose driver offers a direct launch.  It computes exactly the key the generated Python computes (the
 * selection, the device, per parameter the descriptor and the tensor's device, the constexprs, no options), looks
 * the entry up and calls ``entry.direct(g, values...)`` (tensors as their addresses).  Anything else returns the
 * NOT_HANDLED marker and the generated Python does the launch, with all its checks and messages.
 *
 *   launch(state, grid, *args, **kwargs) -> what fn[grid](*args, **kwargs) returns
 *
 * The arguments bound to the parameters by position and by name (names from state), other keywords (options:
 * num_warps=...) keyed in call order as the generated launcher keys them, then relaunch; whatever it does not
 * handle -- a parameter given twice, too many arguments, a value that is not plain -- goes to the generated
 * launcher (state's ST_LAUNCHER) as given.  A steady relaunch allocates nothing but the addresses' ints: the last
 * selection and key are kept (ST_MEMO) and reused while every part of the next one equals theirs.
 *
 *   Subscript, GridLaunch
 *
 * ``fn[grid]`` without a Python frame: JITFunction and Autotuner derive from Subscript, whose ``obj[grid]`` is a
 * GridLaunch(obj._c_grid_state, grid) (else ``obj._subscript(grid)``); calling it is ``launch(state, grid, ...)``
 * for a JIT state, or for an autotuner's state (TU_*) the relaunch of a tuned key: the tuning key and plan of
 * Autotuner._relaunch computed here, then the wrapped kernel's launch with the plan's keywords.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

static PyObject *s_data_ptr, *s_get_device, *s_dtype;

static PyObject *tensor_info(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "tensor_info(tensor, align)");
        return NULL;
    }
    PyObject *t = args[0];
    int align = PyObject_IsTrue(args[1]);
    if (align < 0) return NULL;
    PyObject *ptr = PyObject_CallMethodNoArgs(t, s_data_ptr);
    if (ptr == NULL) return NULL;
    PyObject *dev = PyObject_CallMethodNoArgs(t, s_get_device);
    if (dev == NULL) {
        Py_DECREF(ptr);
        return NULL;
    }
    PyObject *dtype = PyObject_GetAttr(t, s_dtype);
    if (dtype == NULL) {
        Py_DECREF(ptr);
        Py_DECREF(dev);
        return NULL;
    }
    int aligned = 0;
    if (align) {
        unsigned long long p = PyLong_AsUnsignedLongLongMask(ptr);
        if (p == (unsigned long long)-1 && PyErr_Occurred()) {
            Py_DECREF(ptr);
            Py_DECREF(dev);
            Py_DECREF(dtype);
            return NULL;
        }
        aligned = (p & 15) == 0;
    }
    PyObject *desc = PyTuple_Pack(2, dtype, aligned ? Py_True : Py_False);
    Py_DECREF(dtype);
    if (desc == NULL) {
        Py_DECREF(ptr);
        Py_DECREF(dev);
        return NULL;
    }
    PyObject *out = PyTuple_New(3);
    if (out == NULL) {
        Py_DECREF(ptr);
        Py_DECREF(dev);
        Py_DECREF(desc);
        return NULL;
    }
    PyTuple_SET_ITEM(out, 0, ptr); /* steals the references */
    PyTuple_SET_ITEM(out, 1, dev);
    PyTuple_SET_ITEM(out, 2, desc);
    return out;
}

/* relaunch's state tuple (built by tritium.runtime.launch.make_launcher): the states' field orders are the
 * NamedTuples of tritium/compiler/launch_states.py, which tests/runtime/test_launch_states.py checks against these enums */
enum {
    ST_FN, ST_KC_TYPE, ST_REGISTRY, ST_CONTEXTS, ST_ENV, ST_KT, ST_KI, ST_PLUGINS, ST_TENSOR, ST_NOT_HANDLED,
    ST_SPEC, ST_DEFAULTS, ST_INT_DESC, ST_NAMES, ST_LAUNCHER, ST_FN_DICT, ST_MEMO, ST_DESCS, ST_N
};
/* ST_MEMO: a list [selection, key] -- the last launch's selection tuple and fast key, reused (not rebuilt) while
 * every part of the next launch's equals theirs, so that a steady relaunch allocates no tuple (and triggers no
 * garbage collection); ST_DESCS: a dict dtype -> (descriptor unaligned, descriptor aligned), the same two tuples
 * for every tensor of that dtype */
enum { MEMO_SEL, MEMO_KEY };
#define SPEC_CONSTEXPR 1
#define SPEC_SPECIALIZE 2
#define SPEC_ALIGN 4
#define MAX_PARAMS 128

static PyObject *s_globals_unchanged, *s_pre_run_hooks, *s_debug, *s_used_global_vals, *s_cache, *s_fast, *s_forced, *s_pm,
    *s_launch_hooks, *s_direct, *s_driver, *s_kernel, *s_get;

/* a new reference to obj.name, or NULL without an exception set */
static PyObject *attr(PyObject *obj, PyObject *name) {
    PyObject *r = PyObject_GetAttr(obj, name);
    if (r == NULL) PyErr_Clear();
    return r;
}

/* the same read from an object's __dict__ (``d``: what the attribute read returns there -- instance attributes of
 * a class without descriptors of those names, module globals), else through ``attr`` */
static PyObject *dattr(PyObject *d, PyObject *obj, PyObject *name) {
    if (d == Py_None) return attr(obj, name);
    PyObject *r = PyDict_GetItemWithError(d, name);
    if (r == NULL) {
        PyErr_Clear();
        return attr(obj, name);
    }
    return Py_NewRef(r);
}

/* whether no plugin implements the launch hooks: the plugin manager's ``launch_hooks`` is None (``plugins``: the
 * ``tritium.plugins`` module; 0 where it cannot be read) */
static int launch_hooks_off(PyObject *plugins) {
    PyObject *pm = dattr(plugins, Py_None, s_pm);
    PyObject *hooks = pm && pm != Py_None ? attr(pm, s_launch_hooks) : NULL;
    int off = hooks == Py_None;
    Py_XDECREF(pm);
    Py_XDECREF(hooks);
    return off;
}

/* launch_context() and its device as the JIT's fast path reads them (state ``st``): new references to the
 * selection's LaunchContext and its current device; 0 (no exception set) where the C path cannot tell */
static int select_context(PyObject *const *st, PyObject **ctx_out, PyObject **dev_out) {
    PyObject *ctx, *dev;
    PyObject *forced = dattr(st[ST_REGISTRY], Py_None, s_forced);
    if (forced == NULL) return 0;
    PyObject *t = PyDict_GetItemWithError(st[ST_ENV], st[ST_KT]); /* borrowed, NULL: unset */
    PyObject *i = t != NULL || !PyErr_Occurred() ? PyDict_GetItemWithError(st[ST_ENV], st[ST_KI]) : NULL;
    if (PyErr_Occurred()) {
        Py_DECREF(forced);
        PyErr_Clear();
        return 0;
    }
    PyObject *memo = st[ST_MEMO];
    if (!PyList_CheckExact(memo) || PyList_GET_SIZE(memo) != 2) {
        Py_DECREF(forced);
        return 0;
    }
    PyObject *sel = PyList_GET_ITEM(memo, MEMO_SEL);
    if (PyTuple_CheckExact(sel) && PyTuple_GET_SIZE(sel) == 3 && PyTuple_GET_ITEM(sel, 0) == forced &&
        PyTuple_GET_ITEM(sel, 1) == (t ? t : Py_None) && PyTuple_GET_ITEM(sel, 2) == (i ? i : Py_None)) {
        Py_INCREF(sel);
    } else {
        sel = PyTuple_Pack(3, forced, t ? t : Py_None, i ? i : Py_None);
        if (sel != NULL) PyList_SetItem(memo, MEMO_SEL, Py_NewRef(sel)); /* steals; drops the old one */
    }
    Py_DECREF(forced);
    if (sel == NULL) {
        PyErr_Clear();
        return 0;
    }
    ctx = PyDict_GetItemWithError(st[ST_CONTEXTS], sel); /* borrowed */
    Py_DECREF(sel);
    if (ctx == NULL) {
        PyErr_Clear();
        return 0;
    }
    if (!PyTuple_Check(ctx) || PyTuple_GET_SIZE(ctx) != 4) return 0;
    Py_INCREF(ctx);
    dev = PyObject_CallNoArgs(PyTuple_GET_ITEM(ctx, 3));
    if (dev == NULL) {
        Py_DECREF(ctx);
        PyErr_Clear();
        return 0;
    }
    *ctx_out = ctx;
    *dev_out = dev;
    return 1;
}

/* relaunch's work: ``values`` are the n parameters' values (``NOT_HANDLED`` where not given) */
static PyObject *do_relaunch(PyObject *const *st, PyObject *grid, PyObject *const *values, Py_ssize_t nargs_values,
                             PyObject *options, PyObject *ctx_in, PyObject *dev_in, PyObject *const *dtypes_in) {
    PyObject *nh = st[ST_NOT_HANDLED];
    PyObject *spec = st[ST_SPEC], *defaults = st[ST_DEFAULTS], *int_desc = st[ST_INT_DESC];
    Py_ssize_t n = PyTuple_GET_SIZE(spec);
    if (nargs_values != n || n > MAX_PARAMS) return Py_NewRef(nh);
    /* the plain case only: before any work, every value (or default) a tensor or an int */
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *v = values[k] == nh ? PyTuple_GET_ITEM(defaults, k) : values[k];
        if (!PyLong_CheckExact(v) && (PyObject *)Py_TYPE(v) != st[ST_TENSOR]) return Py_NewRef(nh);
    }
    if (!PyTuple_CheckExact(grid) || PyTuple_GET_SIZE(grid) != 1 || !PyLong_CheckExact(PyTuple_GET_ITEM(grid, 0)))
        return Py_NewRef(nh);
    long g = PyLong_AsLong(PyTuple_GET_ITEM(grid, 0));
    if (g < 0 || g > 2147483647L) {
        PyErr_Clear();
        return Py_NewRef(nh);
    }

    PyObject *result = NULL; /* on any early exit: Py_NewRef(nh) */
    PyObject *key = NULL, *fast = NULL, *ctx = NULL, *dev = NULL, *entry = NULL, *tmp = NULL;
    PyObject *vals[MAX_PARAMS + 1];
    Py_ssize_t nvals = 0, at = 0; /* at: how many key parts comps holds (references to drop on an early exit) */
    PyObject *comps[3 + 2 * MAX_PARAMS + 1];
    PyObject *fn = st[ST_FN], *fd = st[ST_FN_DICT];

    /* the function's state: no pre-run hooks, no debug, no globals to check, its KernelCache */
    tmp = dattr(fd, fn, s_pre_run_hooks);
    if (tmp == NULL || PyObject_IsTrue(tmp) != 0) goto not_handled;
    Py_CLEAR(tmp);
    tmp = dattr(fd, fn, s_debug);
    if (tmp != Py_None) goto not_handled;
    Py_CLEAR(tmp);
    tmp = dattr(fd, fn, s_used_global_vals);
    if (tmp == NULL) goto not_handled;
    int uses_globals = PyObject_IsTrue(tmp);
    Py_CLEAR(tmp);
    if (uses_globals < 0) goto not_handled_clear;
    if (uses_globals) { /* the globals it was compiled with must be the very same objects */
        tmp = PyObject_CallMethodNoArgs(fn, s_globals_unchanged);
        if (tmp != Py_True) goto not_handled_clear;
        Py_CLEAR(tmp);
    }
    tmp = dattr(fd, fn, s_cache);
    if (tmp == NULL || (PyObject *)Py_TYPE(tmp) != st[ST_KC_TYPE]) goto not_handled;
    fast = attr(tmp, s_fast);
    Py_CLEAR(tmp);
    if (fast == NULL || !PyDict_CheckExact(fast)) goto not_handled;

    /* the selection: launch_context()'s LaunchContext (backend, arch, driver, device getter) and the device (the
     * caller's, where it selected them just before: the autotuner's relaunch) */
    if (ctx_in != NULL) {
        ctx = Py_NewRef(ctx_in);
        dev = Py_NewRef(dev_in);
    } else if (!select_context(st, &ctx, &dev)) {
        goto not_handled;
    }
    if (!PyDict_CheckExact(st[ST_DESCS])) goto not_handled;
    PyObject *memo = st[ST_MEMO]; /* a list of 2: select_context checked it */

    /* the key: (backend, arch, device, per parameter: descriptor, tensor device | constexpr, options ()) --
     * its parts (new references) in comps, the memo's key taken where they all equal its items */
    comps[at++] = Py_NewRef(PyTuple_GET_ITEM(ctx, 0));
    comps[at++] = Py_NewRef(PyTuple_GET_ITEM(ctx, 1));
    comps[at++] = Py_NewRef(dev);
    for (Py_ssize_t k = 0; k < n; k++) {
        long sp = PyLong_AsLong(PyTuple_GET_ITEM(spec, k));
        PyObject *v = values[k];
        if (v == nh) { /* not given: its default, if it has one */
            v = PyTuple_GET_ITEM(defaults, k);
            if (v == nh) goto not_handled;
        }
        if (sp & SPEC_CONSTEXPR) {
            if (!PyLong_CheckExact(v)) goto not_handled;
            comps[at++] = Py_NewRef(v);
            vals[nvals++] = Py_NewRef(v);
            continue;
        }
        if ((PyObject *)Py_TYPE(v) == st[ST_TENSOR]) {
            PyObject *ptr = PyObject_CallMethodNoArgs(v, s_data_ptr);
            if (ptr == NULL) goto not_handled_clear;
            PyObject *tdev = PyObject_CallMethodNoArgs(v, s_get_device);
            PyObject *dtype = tdev == NULL ? NULL
                              : dtypes_in != NULL && dtypes_in[k] != NULL ? Py_NewRef(dtypes_in[k]) /* the caller's */
                                                                          : PyObject_GetAttr(v, s_dtype);
            unsigned long long p = PyLong_AsUnsignedLongLongMask(ptr);
            if (tdev == NULL || dtype == NULL || (p == (unsigned long long)-1 && PyErr_Occurred())) {
                Py_DECREF(ptr);
                Py_XDECREF(tdev);
                Py_XDECREF(dtype);
                goto not_handled_clear;
            }
            PyObject *pair = PyDict_GetItemWithError(st[ST_DESCS], dtype); /* borrowed */
            if (pair == NULL && !PyErr_Occurred()) {
                PyObject *d0 = PyTuple_Pack(2, dtype, Py_False), *d1 = PyTuple_Pack(2, dtype, Py_True);
                pair = d0 && d1 ? PyTuple_Pack(2, d0, d1) : NULL;
                Py_XDECREF(d0);
                Py_XDECREF(d1);
                if (pair != NULL) {
                    int bad = PyDict_SetItem(st[ST_DESCS], dtype, pair);
                    Py_DECREF(pair); /* the dict holds it */
                    if (bad) pair = NULL;
                }
            }
            Py_DECREF(dtype);
            if (pair == NULL) {
                Py_DECREF(ptr);
                Py_DECREF(tdev);
                goto not_handled_clear; /* an unhashable dtype stand-in: Python's path */
            }
            comps[at++] = Py_NewRef(PyTuple_GET_ITEM(pair, ((sp & SPEC_ALIGN) && !(p & 15)) ? 1 : 0));
            comps[at++] = tdev;
            vals[nvals++] = ptr;
        } else if (PyLong_CheckExact(v)) {
            int overflow = 0;
            long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
            if (overflow || x < -2147483648LL || x > 2147483647LL) goto not_handled; /* wide ints: Python */
            Py_ssize_t d = !(sp & SPEC_SPECIALIZE) ? 3 : x == 1 ? 0 : !(x & 15) ? 1 : 2;
            comps[at++] = Py_NewRef(PyTuple_GET_ITEM(int_desc, d));
            comps[at++] = Py_NewRef(Py_None);
            vals[nvals++] = Py_NewRef(v);
        } else {
            goto not_handled;
        }
    }
    /* the options as the generated launcher keys them: tuple(kwargs.items()) in call order */
    comps[at++] = options != NULL ? Py_NewRef(options) : PyTuple_New(0);
    if (comps[at - 1] == NULL) {
        at--;
        goto not_handled_clear;
    }
    key = PyList_GET_ITEM(memo, MEMO_KEY);
    int same = PyTuple_CheckExact(key) && PyTuple_GET_SIZE(key) == at;
    for (Py_ssize_t j = 0; j < at && same; j++) {
        PyObject *a = comps[j], *b = PyTuple_GET_ITEM(key, j);
        if (a != b && PyObject_RichCompareBool(a, b, Py_EQ) != 1) same = 0; /* dict key equality */
    }
    PyErr_Clear();
    if (same) {
        Py_INCREF(key);
        for (Py_ssize_t j = 0; j < at; j++) Py_DECREF(comps[j]);
    } else {
        key = PyTuple_New(at);
        if (key == NULL) goto not_handled_clear;
        for (Py_ssize_t j = 0; j < at; j++) PyTuple_SET_ITEM(key, j, comps[j]); /* steals */
        PyList_SetItem(memo, MEMO_KEY, Py_NewRef(key));
    }
    at = 0;

    /* the entry, on the selection's driver; launch hooks off; its direct launch */
    entry = PyDict_GetItemWithError(fast, key); /* borrowed; an unhashable option: not handled */
    if (entry == NULL) {
        PyErr_Clear();
        goto not_handled;
    }
    Py_INCREF(entry);
    tmp = attr(entry, s_driver);
    if (tmp != PyTuple_GET_ITEM(ctx, 2)) goto not_handled;
    Py_CLEAR(tmp);
    PyObject *kernel = attr(entry, s_kernel);
    if (kernel == NULL) goto not_handled;
    if (g == 0) {
        result = kernel;
        goto done;
    }
    int hooks_off = launch_hooks_off(st[ST_PLUGINS]);
    PyObject *direct = hooks_off ? attr(entry, s_direct) : NULL;
    if (direct == NULL || direct == Py_None) {
        Py_XDECREF(direct);
        Py_DECREF(kernel);
        goto not_handled;
    }
    PyObject *stack[MAX_PARAMS + 2];
    stack[0] = PyTuple_GET_ITEM(grid, 0);
    for (Py_ssize_t k = 0; k < nvals; k++) stack[1 + k] = vals[k];
    PyObject *r = PyObject_Vectorcall(direct, stack, 1 + nvals, NULL);
    Py_DECREF(direct);
    if (r == NULL) { /* the launch's own error (the direct launch's Python fallback raised it): propagate */
        Py_DECREF(kernel);
        goto fail;
    }
    Py_DECREF(r);
    result = kernel;
    goto done;

not_handled_clear:
    PyErr_Clear();
not_handled:
    result = Py_NewRef(nh);
    goto done;
fail:
    result = NULL;
done:
    for (Py_ssize_t k = 0; k < at; k++) Py_DECREF(comps[k]);
    for (Py_ssize_t k = 0; k < nvals; k++) Py_DECREF(vals[k]);
    Py_XDECREF(tmp);
    Py_XDECREF(key);
    Py_XDECREF(fast);
    Py_XDECREF(ctx);
    Py_XDECREF(dev);
    Py_XDECREF(entry);
    return result;
}

static int state_ok(PyObject *state) {
    if (!PyTuple_Check(state) || PyTuple_GET_SIZE(state) != ST_N) {
        PyErr_SetString(PyExc_TypeError, "relaunch: not a launcher state");
        return 0;
    }
    return 1;
}

static PyObject *relaunch(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 2 || !state_ok(args[0])) return NULL;
    return do_relaunch(&PyTuple_GET_ITEM(args[0], 0), args[1], args + 2, nargs - 2, NULL, NULL, NULL, NULL);
}

/* fn(grid, *args, **kwargs): the Python path's call, as fn[grid](*args, **kwargs) was given */
static PyObject *call_with_grid(PyObject *fn, PyObject *grid, PyObject *const *args, Py_ssize_t nargs,
                                PyObject *kwnames) {
    Py_ssize_t total = nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
    PyObject *small[16], **stack = total + 1 <= 16 ? small : PyMem_Malloc((total + 1) * sizeof(PyObject *));
    if (stack == NULL) return PyErr_NoMemory();
    stack[0] = grid;
    for (Py_ssize_t k = 0; k < total; k++) stack[1 + k] = args[k];
    PyObject *r = PyObject_Vectorcall(fn, stack, (size_t)(nargs + 1), kwnames);
    if (stack != small) PyMem_Free(stack);
    return r;
}

/* fn[grid](*args, **kwargs) for ``state``: the arguments (``args``: nargs positional, then the keywords' values
 * named by kwnames) bound to the parameters by position and name, the plain case relaunched in C, anything else
 * (or a binding Python must explain) handed to the generated launcher, state[ST_LAUNCHER](grid, *args, **kwargs). */
static PyObject *launch_impl(PyObject *state, PyObject *grid, PyObject *const *args, Py_ssize_t nargs,
                             PyObject *kwnames) {
    if (!state_ok(state)) return NULL;
    PyObject *const *st = &PyTuple_GET_ITEM(state, 0);
    PyObject *nh = st[ST_NOT_HANDLED], *names = st[ST_NAMES];
    Py_ssize_t n = PyTuple_GET_SIZE(names), npos = nargs;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    PyObject *values[MAX_PARAMS];
    PyObject *opt_names[MAX_PARAMS], *opt_values[MAX_PARAMS];
    Py_ssize_t nopt = 0;
    int bound = npos <= n && n <= MAX_PARAMS && nkw <= MAX_PARAMS;
    if (bound) {
        for (Py_ssize_t k = 0; k < n; k++) values[k] = k < npos ? args[k] : nh;
        for (Py_ssize_t j = 0; j < nkw && bound; j++) {
            PyObject *kw = PyTuple_GET_ITEM(kwnames, j);
            Py_ssize_t at = -1;
            for (Py_ssize_t k = 0; k < n && at < 0; k++) {
                PyObject *name = PyTuple_GET_ITEM(names, k);
                if (name == kw || PyUnicode_Compare(name, kw) == 0) at = k;
            }
            if (PyErr_Occurred()) PyErr_Clear();
            if (at < 0) { /* an option (num_warps=...): part of the key, in call order */
                opt_names[nopt] = kw;
                opt_values[nopt++] = args[nargs + j];
            } else if (values[at] != nh) {
                bound = 0; /* given twice: Python's error */
            } else {
                values[at] = args[nargs + j];
            }
        }
    }
    if (bound) {
        PyObject *options = NULL;
        if (nopt) {
            options = PyTuple_New(nopt);
            if (options == NULL) return NULL;
            for (Py_ssize_t j = 0; j < nopt; j++) {
                PyObject *item = PyTuple_Pack(2, opt_names[j], opt_values[j]);
                if (item == NULL) {
                    Py_DECREF(options);
                    return NULL;
                }
                PyTuple_SET_ITEM(options, j, item);
            }
        }
        PyObject *r = do_relaunch(st, grid, values, n, options, NULL, NULL, NULL);
        Py_XDECREF(options);
        if (r != nh) return r; /* the kernel, or the launch's error */
        Py_DECREF(r);
    }
    return call_with_grid(st[ST_LAUNCHER], grid, args, nargs, kwnames); /* the generated launcher */
}

/* launch(state, grid, *args, **kwargs): launch_impl as a function */
static PyObject *launch(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs < 2) {
        PyErr_SetString(PyExc_TypeError, "launch(state, grid, *args, **kwargs)");
        return NULL;
    }
    return launch_impl(args[0], args[1], args + 2, nargs - 2, kwnames);
}

/* The autotuner's relaunch of a tuned key (tritium.runtime.autotuner.Autotuner: ``_c_grid_state``), for
 * positional arguments only: the tuning key as Autotuner._tuning_key computes it -- the key arguments' values
 * (ints, floats, strings, bools, None), the tensors' dtype names, the device's name -- its plan, then the wrapped
 * JIT function's relaunch with the plan's keywords bound to their parameters (the plan's slots) and its options;
 * anything else, ``fallback(grid, *args, **kwargs)``.  ``fn``, ``_plans`` and ``cache`` are read from the tuner's
 * __dict__ (TU_DICT) on every launch; TU_MEMO: a list [context, device, device name], the last device's name. */
enum { TU_TUNER, TU_DICT, TU_KEYPOS, TU_NNAMES, TU_DTYPES, TU_DEVNAMES, TU_FALLBACK, TU_TENSOR, TU_MEMO, TU_N };
/* a plan: (config, kwargs, first keyword position, names, values, slots, options) -- Autotuner._run */
enum { PL_CONFIG, PL_KWARGS, PL_MAXPOS, PL_NAMES, PL_VALUES, PL_SLOTS, PL_OPTIONS, PL_N };
static PyObject *s_best_config, *s_c_grid_state, *s_subscript, *s_fn, *s_plans;

static int plain_key_value(PyObject *v) {
    return PyLong_CheckExact(v) || PyFloat_CheckExact(v) || PyUnicode_CheckExact(v) || PyBool_Check(v) ||
           v == Py_None;
}

/* the device's part of the tuning key (borrowed from the tuner's dict or its memo), NULL where unknown */
static PyObject *device_name(PyObject *const *tu, PyObject *ctx, PyObject *dev) {
    PyObject *memo = tu[TU_MEMO];
    if (!PyList_CheckExact(memo) || PyList_GET_SIZE(memo) != 3) return NULL;
    PyObject *mdev = PyList_GET_ITEM(memo, 1);
    if (PyList_GET_ITEM(memo, 0) == ctx && (mdev == dev || PyObject_RichCompareBool(mdev, dev, Py_EQ) == 1))
        return PyList_GET_ITEM(memo, 2);
    PyErr_Clear();
    PyObject *pair = PyTuple_Pack(2, ctx, dev);
    PyObject *dname = pair ? PyDict_GetItemWithError(tu[TU_DEVNAMES], pair) : NULL;
    Py_XDECREF(pair);
    if (dname == NULL) return NULL;
    PyList_SetItem(memo, 0, Py_NewRef(ctx)); /* steals; drops the old ones */
    PyList_SetItem(memo, 1, Py_NewRef(dev));
    PyList_SetItem(memo, 2, Py_NewRef(dname));
    return dname;
}

/* the launch's result, NULL with an exception (the launch's error), or NULL without one: not handled here */
static PyObject *tuned_fast(PyObject *const *tu, PyObject *grid, PyObject *const *args, Py_ssize_t nargs,
                            PyObject *kwnames) {
    if ((kwnames && PyTuple_GET_SIZE(kwnames)) || nargs > MAX_PARAMS) return NULL;
    Py_ssize_t n_names = PyLong_AsSsize_t(tu[TU_NNAMES]);
    if (n_names < 0 || nargs > n_names || !PyTuple_CheckExact(tu[TU_KEYPOS])) {
        PyErr_Clear();
        return NULL;
    }
    PyObject *d = tu[TU_DICT];
    PyObject *fn = PyDict_GetItemWithError(d, s_fn), *plans = fn ? PyDict_GetItemWithError(d, s_plans) : NULL;
    PyObject *cache = plans ? PyDict_GetItemWithError(d, s_cache) : NULL;
    if (cache == NULL || !PyDict_CheckExact(plans) || !PyDict_CheckExact(cache)) {
        PyErr_Clear();
        return NULL;
    }
    PyObject *jstate = attr(fn, s_c_grid_state);
    if (jstate == NULL || !PyTuple_Check(jstate) || PyTuple_GET_SIZE(jstate) != ST_N) {
        Py_XDECREF(jstate);
        return NULL;
    }
    PyObject *const *st = &PyTuple_GET_ITEM(jstate, 0);
    Py_INCREF(plans); /* held: a Python device getter below could rebind the tuner's attributes */
    Py_INCREF(cache);
    PyObject *result = NULL, *key = NULL, *ctx = NULL, *dev = NULL, *plan = NULL;
    PyObject *parts[2 * MAX_PARAMS + 1], *dtypes[MAX_PARAMS] = {NULL}; /* dtypes: the tensors', for the relaunch */
    Py_ssize_t np = 0;
    PyObject *keypos = tu[TU_KEYPOS];
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(keypos) && PyTuple_GET_SIZE(keypos) <= MAX_PARAMS; j++) {
        Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GET_ITEM(keypos, j));
        if (i < 0) goto out;
        if (i >= nargs) continue; /* not given: not in the key (no keywords here) */
        if (!plain_key_value(args[i])) goto out;
        parts[np++] = Py_NewRef(args[i]);
    }
    for (Py_ssize_t i = 0; i < nargs; i++) {
        PyObject *v = args[i];
        if ((PyObject *)Py_TYPE(v) == tu[TU_TENSOR]) {
            PyObject *dtype = dtypes[i] = PyObject_GetAttr(v, s_dtype);
            PyObject *name = dtype ? PyDict_GetItemWithError(tu[TU_DTYPES], dtype) : NULL;
            if (name == NULL) goto out;
            parts[np++] = Py_NewRef(name);
        } else if (!plain_key_value(v)) {
            goto out;
        }
    }
    if (!select_context(st, &ctx, &dev)) goto out;
    PyObject *dname = device_name(tu, ctx, dev);
    if (dname == NULL) goto out;
    parts[np++] = Py_NewRef(dname);
    key = PyTuple_New(np);
    if (key == NULL) goto out;
    for (Py_ssize_t j = 0; j < np; j++) PyTuple_SET_ITEM(key, j, parts[j]); /* steals */
    np = 0;
    plan = PyDict_GetItemWithError(plans, key); /* borrowed */
    if (plan == NULL || !PyTuple_Check(plan) || PyTuple_GET_SIZE(plan) != PL_N) goto out;
    Py_INCREF(plan);
    PyObject *cfg = PyTuple_GET_ITEM(plan, PL_CONFIG), *vals = PyTuple_GET_ITEM(plan, PL_VALUES);
    PyObject *slots = PyTuple_GET_ITEM(plan, PL_SLOTS), *options = PyTuple_GET_ITEM(plan, PL_OPTIONS);
    if (PyDict_GetItemWithError(cache, key) != cfg || !PyTuple_CheckExact(vals) || !PyTuple_CheckExact(slots) ||
        !PyTuple_CheckExact(options) || PyTuple_GET_SIZE(slots) != PyTuple_GET_SIZE(vals) ||
        nargs > PyLong_AsSsize_t(PyTuple_GET_ITEM(plan, PL_MAXPOS)))
        goto out;
    /* the wrapped function's parameters: the positional arguments, then the plan's keywords in their slots */
    PyObject *nh = st[ST_NOT_HANDLED];
    Py_ssize_t n = PyTuple_GET_SIZE(st[ST_NAMES]);
    if (nargs > n || n > MAX_PARAMS) goto out;
    PyObject *values[MAX_PARAMS];
    for (Py_ssize_t k = 0; k < n; k++) values[k] = k < nargs ? args[k] : nh;
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(vals); j++) {
        Py_ssize_t at = PyLong_AsSsize_t(PyTuple_GET_ITEM(slots, j));
        if (at < -1 || at >= n || (at >= 0 && values[at] != nh)) goto out; /* given twice: Python explains */
        if (at >= 0) values[at] = PyTuple_GET_ITEM(vals, j);
    }
    if (PyDict_GetItemWithError(d, s_best_config) != cfg && PyObject_SetAttr(tu[TU_TUNER], s_best_config, cfg) < 0)
        goto out;
    result = do_relaunch(st, grid, values, n, PyTuple_GET_SIZE(options) ? options : NULL, ctx, dev, dtypes);
    if (result == nh) { /* not the plain case after all: the launcher with the plan's keywords */
        Py_CLEAR(result);
        PyObject *names = PyTuple_GET_ITEM(plan, PL_NAMES);
        PyObject *stack[2 * MAX_PARAMS];
        if (!PyTuple_CheckExact(names) || PyTuple_GET_SIZE(names) != PyTuple_GET_SIZE(vals) ||
            PyTuple_GET_SIZE(vals) > MAX_PARAMS)
            goto out;
        for (Py_ssize_t i = 0; i < nargs; i++) stack[i] = args[i];
        for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(vals); j++) stack[nargs + j] = PyTuple_GET_ITEM(vals, j);
        result = call_with_grid(st[ST_LAUNCHER], grid, stack, nargs, PyTuple_GET_SIZE(names) ? names : NULL);
    }
    Py_DECREF(plan);
    plan = NULL;
    if (result == NULL) goto done; /* the launch's error */
out:
    if (result == NULL) PyErr_Clear();
done:
    for (Py_ssize_t j = 0; j < np; j++) Py_DECREF(parts[j]);
    for (Py_ssize_t i = 0; i < nargs; i++) Py_XDECREF(dtypes[i]);
    Py_XDECREF(plan);
    Py_XDECREF(key);
    Py_XDECREF(ctx);
    Py_XDECREF(dev);
    Py_DECREF(jstate);
    Py_DECREF(plans);
    Py_DECREF(cache);
    return result;
}

static PyObject *tuned_launch_impl(PyObject *state, PyObject *grid, PyObject *const *args, Py_ssize_t nargs,
                                   PyObject *kwnames) {
    PyObject *const *tu = &PyTuple_GET_ITEM(state, 0);
    PyObject *r = tuned_fast(tu, grid, args, nargs, kwnames);
    if (r != NULL || PyErr_Occurred()) return r;
    return call_with_grid(tu[TU_FALLBACK], grid, args, nargs, kwnames);
}

/* Heuristics (tritium.runtime.autotuner.Heuristics: ``_c_grid_state``): the arguments' dict -- the defaults, the
 * positional arguments by name, the keywords -- each heuristic called on a copy of it (its value then added),
 * then the wrapped function's launch with the values as keywords: from C where it has a C state (a JIT function,
 * an autotuner, heuristics), else through its ``[grid]``.  A keyword at the call that a heuristic sets, or more
 * positional arguments than parameters: ``fallback(grid, *args, **kwargs)``. */
enum { HE_OBJ, HE_NAMES, HE_DEFAULTS, HE_VALUES, HE_KWNAMES, HE_INNER, HE_FALLBACK, HE_N };

/* CompiledKernel (``_c_grid_state``, set by tritium.compiler.launch._bind_c once loaded on a device): over a grid
 * (g,), (g, 1) or (g, 1, 1), g > 0, with the runtime arguments positionally, while the backend's launch driver is
 * still CK_DRIVER and no plugin implements the launch hooks: the device's direct launch (CK_DIRECTS: device ->
 * fn(g, *args)) with each torch tensor as its address (on the current device; else the Python path explains);
 * anything else ``fallback(grid, *args)`` (CompiledKernel.launch). */
enum { CK_KERNEL, CK_DRIVERS, CK_BACKEND, CK_DRIVER, CK_GETTER, CK_DIRECTS, CK_PLUGINS, CK_TENSOR, CK_FALLBACK,
       CK_NARGS, CK_N };

_Static_assert((int)ST_N != (int)TU_N && (int)ST_N != (int)HE_N && (int)ST_N != (int)CK_N && (int)TU_N != (int)HE_N &&
                   (int)TU_N != (int)CK_N && (int)HE_N != (int)CK_N,
               "the launcher states are told apart by their sizes");

static PyObject *dispatch(PyObject *state, PyObject *grid, PyObject *const *args, Py_ssize_t nargs,
                          PyObject *kwnames);

static PyObject *heuristics_launch(PyObject *const *he, PyObject *grid, PyObject *const *args, Py_ssize_t nargs,
                                   PyObject *kwnames) {
    PyObject *names = he[HE_NAMES], *values = he[HE_VALUES], *hkw = he[HE_KWNAMES];
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0, nh = PyTuple_GET_SIZE(values);
    if (nargs > PyTuple_GET_SIZE(names) || nargs + nkw + nh > 2 * MAX_PARAMS || !PyDict_CheckExact(he[HE_DEFAULTS]))
        return call_with_grid(he[HE_FALLBACK], grid, args, nargs, kwnames);
    for (Py_ssize_t j = 0; j < nkw; j++) {
        int c = PySequence_Contains(hkw, PyTuple_GET_ITEM(kwnames, j));
        if (c != 0) {
            PyErr_Clear();
            return call_with_grid(he[HE_FALLBACK], grid, args, nargs, kwnames);
        }
    }
    PyObject *seen = PyDict_Copy(he[HE_DEFAULTS]);
    if (seen == NULL) return NULL;
    PyObject *stack[2 * MAX_PARAMS], *computed[2 * MAX_PARAMS];
    Py_ssize_t nc = 0;
    PyObject *result = NULL, *kw = NULL, *inner = NULL;
    for (Py_ssize_t i = 0; i < nargs; i++)
        if (PyDict_SetItem(seen, PyTuple_GET_ITEM(names, i), args[i]) < 0) goto done;
    for (Py_ssize_t j = 0; j < nkw; j++)
        if (PyDict_SetItem(seen, PyTuple_GET_ITEM(kwnames, j), args[nargs + j]) < 0) goto done;
    for (Py_ssize_t j = 0; j < nh; j++) {
        PyObject *item = PyTuple_GET_ITEM(values, j);
        /* each heuristic its own dict (one may change it); the last one the dict itself: nothing reads it after */
        PyObject *copy = j + 1 < nh ? PyDict_Copy(seen) : Py_NewRef(seen);
        if (copy == NULL) goto done;
        PyObject *v = PyObject_CallOneArg(PyTuple_GET_ITEM(item, 1), copy); /* a user's heuristic: its error */
        Py_DECREF(copy);
        if (v == NULL) goto done;
        computed[nc++] = v;
        if (PyDict_SetItem(seen, PyTuple_GET_ITEM(item, 0), v) < 0) goto done;
    }
    for (Py_ssize_t i = 0; i < nargs + nkw; i++) stack[i] = args[i];
    for (Py_ssize_t j = 0; j < nc; j++) stack[nargs + nkw + j] = computed[j];
    if (nkw == 0) {
        kw = Py_NewRef(hkw);
    } else {
        kw = PyTuple_New(nkw + nh);
        if (kw == NULL) goto done;
        for (Py_ssize_t j = 0; j < nkw; j++) PyTuple_SET_ITEM(kw, j, Py_NewRef(PyTuple_GET_ITEM(kwnames, j)));
        for (Py_ssize_t j = 0; j < nh; j++) PyTuple_SET_ITEM(kw, nkw + j, Py_NewRef(PyTuple_GET_ITEM(hkw, j)));
    }
    PyObject *istate = attr(he[HE_INNER], s_c_grid_state);
    if (istate != NULL && PyTuple_Check(istate) && PyTuple_GET_SIZE(istate) != CK_N &&
        (PyTuple_GET_SIZE(istate) == ST_N || PyTuple_GET_SIZE(istate) == TU_N || PyTuple_GET_SIZE(istate) == HE_N)) {
        result = dispatch(istate, grid, stack, nargs, PyTuple_GET_SIZE(kw) ? kw : NULL);
        Py_DECREF(istate);
        goto done;
    }
    Py_XDECREF(istate);
    inner = PyObject_GetItem(he[HE_INNER], grid); /* the wrapped kernel's [grid], as Python would */
    if (inner != NULL) result = PyObject_Vectorcall(inner, stack, (size_t)nargs, PyTuple_GET_SIZE(kw) ? kw : NULL);
done:
    for (Py_ssize_t j = 0; j < nc; j++) Py_DECREF(computed[j]);
    Py_XDECREF(kw);
    Py_XDECREF(inner);
    Py_DECREF(seen);
    return result;
}

/* the grid's program count along x where it is (g,), (g, 1) or (g, 1, 1) with g > 0, else 0 */
static long grid_x(PyObject *grid) {
    if (!PyTuple_CheckExact(grid) || PyTuple_GET_SIZE(grid) < 1 || PyTuple_GET_SIZE(grid) > 3) return 0;
    for (Py_ssize_t i = 1; i < PyTuple_GET_SIZE(grid); i++) {
        PyObject *v = PyTuple_GET_ITEM(grid, i);
        if (!PyLong_CheckExact(v) || PyLong_AsLong(v) != 1) {
            PyErr_Clear();
            return 0;
        }
    }
    PyObject *g = PyTuple_GET_ITEM(grid, 0);
    if (!PyLong_CheckExact(g)) return 0;
    long x = PyLong_AsLong(g);
    if (x <= 0 || x > 2147483647L) {
        PyErr_Clear();
        return 0;
    }
    return x;
}

/* NULL without an exception: not handled here */
static PyObject *compiled_fast(PyObject *const *ck, PyObject *grid, PyObject *const *args, Py_ssize_t nargs,
                               PyObject *kwnames) {
    if ((kwnames && PyTuple_GET_SIZE(kwnames)) || nargs > MAX_PARAMS || nargs != PyLong_AsSsize_t(ck[CK_NARGS]) ||
        !PyDict_CheckExact(ck[CK_DRIVERS]) || !PyDict_CheckExact(ck[CK_DIRECTS])) {
        PyErr_Clear();
        return NULL;
    }
    long gx = grid_x(grid);
    if (gx == 0) return NULL;
    PyObject *d = PyDict_GetItemWithError(ck[CK_DRIVERS], ck[CK_BACKEND]); /* borrowed */
    if (d != ck[CK_DRIVER]) {
        PyErr_Clear();
        return NULL;
    }
    if (!launch_hooks_off(ck[CK_PLUGINS])) return NULL;
    PyObject *dev = PyObject_CallNoArgs(ck[CK_GETTER]);
    if (dev == NULL) {
        PyErr_Clear();
        return NULL;
    }
    PyObject *direct = PyDict_GetItemWithError(ck[CK_DIRECTS], dev); /* borrowed */
    if (direct == NULL) {
        PyErr_Clear();
        Py_DECREF(dev);
        return NULL;
    }
    Py_INCREF(direct);
    PyObject *stack[MAX_PARAMS + 1], *result = NULL;
    Py_ssize_t nv = 0; /* the addresses made (references to drop) */
    PyObject *made[MAX_PARAMS];
    stack[0] = PyLong_FromLong(gx);
    if (stack[0] == NULL) goto out;
    for (Py_ssize_t i = 0; i < nargs; i++) {
        PyObject *v = args[i];
        if ((PyObject *)Py_TYPE(v) != ck[CK_TENSOR]) {
            stack[1 + i] = v;
            continue;
        }
        PyObject *tdev = PyObject_CallMethodNoArgs(v, s_get_device);
        int same = tdev != NULL && (tdev == dev || PyObject_RichCompareBool(tdev, dev, Py_EQ) == 1);
        Py_XDECREF(tdev);
        PyObject *ptr = same ? PyObject_CallMethodNoArgs(v, s_data_ptr) : NULL;
        if (ptr == NULL) goto out; /* another device: the Python path says so */
        stack[1 + i] = made[nv++] = ptr;
    }
    result = PyObject_Vectorcall(direct, stack, (size_t)(1 + nargs), NULL); /* NULL: the launch's error */
    goto done;
out:
    PyErr_Clear();
done:
    Py_XDECREF(stack[0]);
    for (Py_ssize_t k = 0; k < nv; k++) Py_DECREF(made[k]);
    Py_DECREF(direct);
    Py_DECREF(dev);
    return result;
}

static int is_state(PyObject *state) {
    if (!PyTuple_Check(state)) return 0; /* the named states of tritium.compiler.launch_states: tuple subclasses */
    Py_ssize_t n = PyTuple_GET_SIZE(state);
    return n == ST_N || n == TU_N || n == HE_N || n == CK_N;
}

/* fn[grid](*args, **kwargs) for a state of any kind (is_state) */
static PyObject *dispatch(PyObject *state, PyObject *grid, PyObject *const *args, Py_ssize_t nargs,
                          PyObject *kwnames) {
    PyObject *const *it = &PyTuple_GET_ITEM(state, 0);
    switch (PyTuple_GET_SIZE(state)) {
    case TU_N:
        return tuned_launch_impl(state, grid, args, nargs, kwnames);
    case HE_N:
        return heuristics_launch(it, grid, args, nargs, kwnames);
    case CK_N: {
        PyObject *r = compiled_fast(it, grid, args, nargs, kwnames);
        if (r != NULL || PyErr_Occurred()) return r;
        return call_with_grid(it[CK_FALLBACK], grid, args, nargs, kwnames);
    }
    default:
        return launch_impl(state, grid, args, nargs, kwnames);
    }
}

/* GridLaunch: what ``fn[grid]`` returns -- launch_impl(state, grid, ...) when called (a partial of ``launch``
 * without partial's argument copying) */
typedef struct {
    PyObject_HEAD
    PyObject *state, *grid;
    vectorcallfunc vectorcall;
} GridLaunch;

static PyObject *grid_launch_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    GridLaunch *g = (GridLaunch *)self;
    return dispatch(g->state, g->grid, args, PyVectorcall_NARGS(nargsf), kwnames);
}

static int grid_launch_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(((GridLaunch *)self)->state);
    Py_VISIT(((GridLaunch *)self)->grid);
    return 0;
}

static int grid_launch_clear(PyObject *self) {
    Py_CLEAR(((GridLaunch *)self)->state);
    Py_CLEAR(((GridLaunch *)self)->grid);
    return 0;
}

static void grid_launch_dealloc(PyObject *self) {
    PyObject_GC_UnTrack(self);
    grid_launch_clear(self);
    PyObject_GC_Del(self);
}

static PyObject *grid_launch_repr(PyObject *self) {
    GridLaunch *g = (GridLaunch *)self;
    Py_ssize_t n = PyTuple_GET_SIZE(g->state);
    PyObject *fn = PyTuple_GET_ITEM(g->state, n == TU_N ? TU_TUNER : n == HE_N ? HE_OBJ : n == CK_N ? CK_KERNEL : ST_FN);
    return PyUnicode_FromFormat("<launch of %R over grid %R>", fn, g->grid);
}

static PyMemberDef grid_launch_members[] = {
    {"state", T_OBJECT_EX, offsetof(GridLaunch, state), READONLY, "the launcher state (tritium.runtime.launch)"},
    {"grid", T_OBJECT_EX, offsetof(GridLaunch, grid), READONLY, "the grid it launches over"},
    {NULL},
};

static PyTypeObject GridLaunchType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tritium._speedups.GridLaunch",
    .tp_basicsize = sizeof(GridLaunch),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "fn[grid]: calling it launches fn over grid (tritium._speedups.launch(state, grid, ...)).",
    .tp_vectorcall_offset = offsetof(GridLaunch, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_traverse = grid_launch_traverse,
    .tp_clear = grid_launch_clear,
    .tp_dealloc = grid_launch_dealloc,
    .tp_repr = grid_launch_repr,
    .tp_members = grid_launch_members,
};

static PyObject *new_grid_launch(PyObject *state, PyObject *grid) {
    GridLaunch *g = PyObject_GC_New(GridLaunch, &GridLaunchType);
    if (g == NULL) return NULL;
    g->state = Py_NewRef(state);
    g->grid = Py_NewRef(grid);
    g->vectorcall = grid_launch_call;
    PyObject_GC_Track((PyObject *)g);
    return (PyObject *)g;
}

/* Subscript: the base class whose ``obj[grid]`` is a GridLaunch of ``obj._c_grid_state`` (a launcher state,
 * tritium.runtime.jit.JITFunction sets it once its launcher is made), else ``obj._subscript(grid)`` -- the
 * subscript without a Python frame */

static PyObject *subscript(PyObject *self, PyObject *grid) {
    PyObject *state = PyObject_GetAttr(self, s_c_grid_state);
    if (state != NULL && is_state(state)) {
        PyObject *r = new_grid_launch(state, grid);
        Py_DECREF(state);
        return r;
    }
    Py_XDECREF(state);
    PyErr_Clear();
    return PyObject_CallMethodOneArg(self, s_subscript, grid);
}

static PyMappingMethods subscript_mapping = {.mp_subscript = subscript};

static PyTypeObject SubscriptType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tritium._speedups.Subscript",
    .tp_basicsize = sizeof(PyObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Base class: obj[grid] is a GridLaunch of obj._c_grid_state, else obj._subscript(grid).",
    .tp_as_mapping = &subscript_mapping,
    /* tp_new: object's, set in PyInit (not a constant here).  A class with a pure-Python first base and this one
     * (JITFunction(JITCallable, Subscript, ...)) gets object's tp_new from that base; ``Subscript.__new__`` must be
     * the same function, or ``copy``/``pickle`` (``cls.__new__(cls)``, found on Subscript) refuse it as unsafe */
};

static PyMethodDef methods[] = {
    {"tensor_info", (PyCFunction)(void (*)(void))tensor_info, METH_FASTCALL,
     "tensor_info(t, align) -> (data_ptr, device, (dtype, aligned)) of a torch tensor."},
    {"relaunch", (PyCFunction)(void (*)(void))relaunch, METH_FASTCALL,
     "relaunch(state, grid, *values): the JIT's relaunch of the plain case (see the source's header)."},
    {"launch", (PyCFunction)(void (*)(void))launch, METH_FASTCALL | METH_KEYWORDS,
     "launch(state, grid, *args, **kwargs): fn[grid](...) -- relaunch in C, else the generated launcher."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_speedups",
                                    "The JIT launcher's per-tensor reads in C (see the source's header).", -1,
                                    methods};

PyMODINIT_FUNC PyInit__speedups(void) {
    s_data_ptr = PyUnicode_InternFromString("data_ptr");
    s_get_device = PyUnicode_InternFromString("get_device");
    s_dtype = PyUnicode_InternFromString("dtype");
    if (s_data_ptr == NULL || s_get_device == NULL || s_dtype == NULL) return NULL;
#define INTERN(v, name) if ((v = PyUnicode_InternFromString(name)) == NULL) return NULL
    INTERN(s_pre_run_hooks, "pre_run_hooks");
    INTERN(s_globals_unchanged, "_globals_unchanged");
    INTERN(s_debug, "debug");
    INTERN(s_used_global_vals, "used_global_vals");
    INTERN(s_cache, "cache");
    INTERN(s_fast, "fast");
    INTERN(s_forced, "forced_backend");
    INTERN(s_pm, "_pm");
    INTERN(s_launch_hooks, "launch_hooks");
    INTERN(s_direct, "direct");
    INTERN(s_driver, "driver");
    INTERN(s_kernel, "kernel");
    INTERN(s_get, "get");
    INTERN(s_c_grid_state, "_c_grid_state");
    INTERN(s_subscript, "_subscript");
    INTERN(s_best_config, "best_config");
    INTERN(s_fn, "fn");
    INTERN(s_plans, "_plans");
    SubscriptType.tp_new = PyBaseObject_Type.tp_new;
    if (PyType_Ready(&GridLaunchType) < 0 || PyType_Ready(&SubscriptType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddObjectRef(m, "GridLaunch", (PyObject *)&GridLaunchType) < 0 ||
        PyModule_AddObjectRef(m, "Subscript", (PyObject *)&SubscriptType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
