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
 * ``fn[grid]`` is ``partial(launch, state, grid)``: the arguments bound to the parameters by position and by
 * name (names from state), other keywords (options: num_warps=...) keyed in call order as the generated launcher
 * keys them, then relaunch; whatever it does not handle -- a parameter given twice, too many arguments, a value
 * that is not plain -- goes to the generated launcher (state's ST_LAUNCHER) as given.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

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

/* relaunch's state tuple (built by tritium.runtime.launch.make_launcher) */
enum {
    ST_FN, ST_KC_TYPE, ST_REGISTRY, ST_CONTEXTS, ST_ENV, ST_KT, ST_KI, ST_PLUGINS, ST_TENSOR, ST_NOT_HANDLED,
    ST_SPEC, ST_DEFAULTS, ST_INT_DESC, ST_NAMES, ST_LAUNCHER, ST_FN_DICT, ST_N
};
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

/* relaunch's work: ``values`` are the n parameters' values (``NOT_HANDLED`` where not given) */
static PyObject *do_relaunch(PyObject *const *st, PyObject *grid, PyObject *const *values, Py_ssize_t nargs_values,
                             PyObject *options) {
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
    Py_ssize_t nvals = 0;
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

    /* the selection: launch_context()'s key, its LaunchContext (backend, arch, driver, device getter) */
    PyObject *forced = dattr(st[ST_REGISTRY], Py_None, s_forced);
    if (forced == NULL) goto not_handled;
    PyObject *t = PyDict_GetItemWithError(st[ST_ENV], st[ST_KT]); /* borrowed, NULL: unset */
    PyObject *i = t != NULL || !PyErr_Occurred() ? PyDict_GetItemWithError(st[ST_ENV], st[ST_KI]) : NULL;
    if (PyErr_Occurred()) {
        Py_DECREF(forced);
        PyErr_Clear();
        goto not_handled;
    }
    PyObject *sel = PyTuple_Pack(3, forced, t ? t : Py_None, i ? i : Py_None);
    Py_DECREF(forced);
    if (sel == NULL) goto fail;
    ctx = PyDict_GetItemWithError(st[ST_CONTEXTS], sel); /* borrowed */
    Py_DECREF(sel);
    if (ctx == NULL) {
        PyErr_Clear();
        goto not_handled;
    }
    Py_INCREF(ctx);
    if (!PyTuple_Check(ctx) || PyTuple_GET_SIZE(ctx) != 4) goto not_handled;
    dev = PyObject_CallNoArgs(PyTuple_GET_ITEM(ctx, 3));
    if (dev == NULL) {
        PyErr_Clear();
        goto not_handled;
    }

    /* the key: (backend, arch, device, per parameter: descriptor, tensor device | constexpr, options ()) */
    Py_ssize_t n_runtime = 0;
    for (Py_ssize_t k = 0; k < n; k++)
        if (!(PyLong_AsLong(PyTuple_GET_ITEM(spec, k)) & SPEC_CONSTEXPR)) n_runtime++;
    key = PyTuple_New(3 + 2 * n_runtime + (n - n_runtime) + 1);
    if (key == NULL) goto fail;
    PyTuple_SET_ITEM(key, 0, Py_NewRef(PyTuple_GET_ITEM(ctx, 0)));
    PyTuple_SET_ITEM(key, 1, Py_NewRef(PyTuple_GET_ITEM(ctx, 1)));
    PyTuple_SET_ITEM(key, 2, Py_NewRef(dev));
    Py_ssize_t at = 3;
    for (Py_ssize_t k = 0; k < n; k++) {
        long sp = PyLong_AsLong(PyTuple_GET_ITEM(spec, k));
        PyObject *v = values[k];
        if (v == nh) { /* not given: its default, if it has one */
            v = PyTuple_GET_ITEM(defaults, k);
            if (v == nh) goto not_handled;
        }
        if (sp & SPEC_CONSTEXPR) {
            if (!PyLong_CheckExact(v)) goto not_handled;
            PyTuple_SET_ITEM(key, at++, Py_NewRef(v));
            vals[nvals++] = Py_NewRef(v);
            continue;
        }
        if ((PyObject *)Py_TYPE(v) == st[ST_TENSOR]) {
            PyObject *ptr = PyObject_CallMethodNoArgs(v, s_data_ptr);
            if (ptr == NULL) goto not_handled_clear;
            PyObject *tdev = PyObject_CallMethodNoArgs(v, s_get_device);
            PyObject *dtype = tdev ? PyObject_GetAttr(v, s_dtype) : NULL;
            unsigned long long p = PyLong_AsUnsignedLongLongMask(ptr);
            if (tdev == NULL || dtype == NULL || (p == (unsigned long long)-1 && PyErr_Occurred())) {
                Py_DECREF(ptr);
                Py_XDECREF(tdev);
                Py_XDECREF(dtype);
                goto not_handled_clear;
            }
            PyObject *desc = PyTuple_Pack(2, dtype, ((sp & SPEC_ALIGN) && !(p & 15)) ? Py_True : Py_False);
            Py_DECREF(dtype);
            if (desc == NULL) {
                Py_DECREF(ptr);
                Py_DECREF(tdev);
                goto fail;
            }
            PyTuple_SET_ITEM(key, at++, desc);
            PyTuple_SET_ITEM(key, at++, tdev);
            vals[nvals++] = ptr;
        } else if (PyLong_CheckExact(v)) {
            int overflow = 0;
            long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
            if (overflow || x < -2147483648LL || x > 2147483647LL) goto not_handled; /* wide ints: Python */
            Py_ssize_t d = !(sp & SPEC_SPECIALIZE) ? 3 : x == 1 ? 0 : !(x & 15) ? 1 : 2;
            PyTuple_SET_ITEM(key, at++, Py_NewRef(PyTuple_GET_ITEM(int_desc, d)));
            PyTuple_SET_ITEM(key, at++, Py_NewRef(Py_None));
            vals[nvals++] = Py_NewRef(v);
        } else {
            goto not_handled;
        }
    }
    /* the options as the generated launcher keys them: tuple(kwargs.items()) in call order */
    PyTuple_SET_ITEM(key, at++, options != NULL ? Py_NewRef(options) : PyTuple_New(0));
    if (PyTuple_GET_ITEM(key, at - 1) == NULL) goto fail;

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
    PyObject *pm = dattr(st[ST_PLUGINS], Py_None, s_pm);
    PyObject *hooks = pm && pm != Py_None ? attr(pm, s_launch_hooks) : NULL;
    int hooks_off = hooks == Py_None;
    Py_XDECREF(pm);
    Py_XDECREF(hooks);
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
    return do_relaunch(&PyTuple_GET_ITEM(args[0], 0), args[1], args + 2, nargs - 2, NULL);
}

/* launch(state, grid, *args, **kwargs): fn[grid](*args, **kwargs) -- the arguments bound to the parameters by
 * position and name, the plain case relaunched in C, anything else (or a binding Python must explain) handed to
 * the generated launcher, state[ST_LAUNCHER](grid, *args, **kwargs). */
static PyObject *launch(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs < 2 || !state_ok(args[0])) return NULL;
    PyObject *const *st = &PyTuple_GET_ITEM(args[0], 0);
    PyObject *nh = st[ST_NOT_HANDLED], *names = st[ST_NAMES];
    Py_ssize_t n = PyTuple_GET_SIZE(names), npos = nargs - 2;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    PyObject *values[MAX_PARAMS];
    PyObject *opt_names[MAX_PARAMS], *opt_values[MAX_PARAMS];
    Py_ssize_t nopt = 0;
    int bound = npos <= n && n <= MAX_PARAMS && nkw <= MAX_PARAMS;
    if (bound) {
        for (Py_ssize_t k = 0; k < n; k++) values[k] = k < npos ? args[2 + k] : nh;
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
        PyObject *r = do_relaunch(st, args[1], values, n, options);
        Py_XDECREF(options);
        if (r != nh) return r; /* the kernel, or the launch's error */
        Py_DECREF(r);
    }
    return PyObject_Vectorcall(st[ST_LAUNCHER], args + 1, (size_t)(nargs - 1), kwnames);
}

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
    INTERN(s_forced, "_forced");
    INTERN(s_pm, "_pm");
    INTERN(s_launch_hooks, "launch_hooks");
    INTERN(s_direct, "direct");
    INTERN(s_driver, "driver");
    INTERN(s_kernel, "kernel");
    INTERN(s_get, "get");
    return PyModule_Create(&module);
}
