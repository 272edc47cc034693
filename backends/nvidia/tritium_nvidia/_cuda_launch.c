/* tritium_nvidia._cuda_launch: cuLaunchKernel without the cuda.bindings wrapper.
 *
 * Built with the package (an optional setuptools extension: where no C compiler is present, pip installs
 * tritium without it and the launcher calls cuda.bindings' cuLaunchKernel as before).  cuda.bindings spends
 * ~1.2 us per call above the driver's own cost converting its arguments and building the CUresult enum it
 * returns (measured on an H100 host: 3.8 us vs 2.6 us from C); this takes plain ints and returns the CUresult
 * as an int.
 *
 * libcuda.so.1 is opened, and cuLaunchKernel looked up, on the first call (no CUDA headers or libraries at
 * build time; importing the module touches nothing CUDA).  The launch is made with the GIL released, as
 * cuda.bindings does.
 *
 *   launch(function, gx, gy, gz, block, shared, stream, params) -> CUresult (int)
 *       function, stream: the CUfunction / CUstream handles as ints; params: the address of the kernel's
 *       void*[] argument array (see tritium_nvidia.launcher.Packer).  Block is (block, 1, 1).
 *   available() -> "" when libcuda's cuLaunchKernel was found, else why not
 *   set_launch_function(address) -> None: tests call a stand-in with cuLaunchKernel's signature (0: libcuda's)
 *   make_direct(fallback, function, block, shared, stream_getter, device, pack_into, buffer, params, positions,
 *               owner, n_extra, n_values[, codes, offsets, buffer_address, size]) -> a capsule for
 *   launch_direct(capsule, gx, v0, ..., v{n_values-1}) -> None
 *       The JIT's relaunch fast path (tritium_nvidia.launcher: ``launch.direct``) without a Python frame: the
 *       stream is stream_getter(device) (torch's raw current stream), pack_into(buffer, 0, v[positions]...,
 *       0 * n_extra) fills the kernel's argument buffer (or, given each runtime argument's struct code among
 *       'Q' 'q' 'i' 'I' and slot offset, the buffer is zeroed and plain ints written here, pack_into's work
 *       without its call), then cuLaunchKernel over (gx, 1, 1).  Anything else --
 *       a thread other than ``owner`` (the buffer is that thread's), a failing getter or pack (an argument the
 *       Python conversion must explain), a launch error -- calls fallback(gx, v0, ...) instead, the generated
 *       Python function that does the same with every check and message.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

typedef int (*launch_fn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *,
                         void **, void **);

static launch_fn cu_launch = NULL;
static char why_not[256] = "";

static int resolve(void) {
    if (cu_launch != NULL) return 1;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (lib == NULL) {
        const char *e = dlerror();
        snprintf(why_not, sizeof why_not, "libcuda.so.1 not loadable: %s", e ? e : "?");
        return 0;
    }
    cu_launch = (launch_fn)dlsym(lib, "cuLaunchKernel");
    if (cu_launch == NULL) {
        snprintf(why_not, sizeof why_not, "libcuda.so.1 has no cuLaunchKernel");
        return 0;
    }
    why_not[0] = 0;
    return 1;
}

static int as_ptr(PyObject *o, void **out) {
    *out = PyLong_AsVoidPtr(o);
    return !(*out == NULL && PyErr_Occurred());
}

static int as_uint(PyObject *o, unsigned *out) {
    unsigned long v = PyLong_AsUnsignedLong(o);
    if (v == (unsigned long)-1 && PyErr_Occurred()) return 0;
    if (v > 0xFFFFFFFFul) {
        PyErr_SetString(PyExc_OverflowError, "launch dimension or shared memory size above 2**32 - 1");
        return 0;
    }
    *out = (unsigned)v;
    return 1;
}

static PyObject *launch(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    void *function, *stream, *params;
    unsigned gx, gy, gz, block, shared;
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError, "launch(function, gx, gy, gz, block, shared, stream, params)");
        return NULL;
    }
    if (!as_ptr(args[0], &function) || !as_uint(args[1], &gx) || !as_uint(args[2], &gy) ||
        !as_uint(args[3], &gz) || !as_uint(args[4], &block) || !as_uint(args[5], &shared) ||
        !as_ptr(args[6], &stream) || !as_ptr(args[7], &params))
        return NULL;
    if (cu_launch == NULL && !resolve()) {
        PyErr_SetString(PyExc_RuntimeError, why_not);
        return NULL;
    }
    int err;
    Py_BEGIN_ALLOW_THREADS
    err = cu_launch(function, gx, gy, gz, block, 1, 1, shared, stream, (void **)params, NULL);
    Py_END_ALLOW_THREADS
    return PyLong_FromLong(err);
}

#define DIRECT_MAX_ARGS 256
static const char *DIRECT = "tritium_nvidia.direct";

typedef struct {
    PyObject *fallback, *stream_getter, *device, *pack_into, *buffer, *zero;
    void *function, *params;
    unsigned block, shared;
    Py_ssize_t npos, n_extra, n_values;
    Py_ssize_t pos[DIRECT_MAX_ARGS];
    unsigned long owner;
    /* packing in C where every runtime argument is a pointer or an integer: its struct code ('Q', 'q', 'i',
     * 'I') and 8-byte slot; the buffer's address and size (zeroed first, as pack_into does) */
    char codes[DIRECT_MAX_ARGS];
    Py_ssize_t offsets[DIRECT_MAX_ARGS];
    char *buf;
    Py_ssize_t buf_size;
    int c_pack;
} Direct;

/* pack value v as code c at p; 0 when it is not a plain int in range (pack_into / the Python path decide) */
static int pack_int(char c, PyObject *v, char *p) {
    if (!PyLong_CheckExact(v)) return 0;
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (x == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    if (c == 'Q') {
        unsigned long long u;
        if (overflow > 0) {
            u = PyLong_AsUnsignedLongLong(v);
            if (u == (unsigned long long)-1 && PyErr_Occurred()) {
                PyErr_Clear();
                return 0;
            }
        } else if (overflow < 0 || x < 0) {
            return 0;
        } else {
            u = (unsigned long long)x;
        }
        memcpy(p, &u, 8);
        return 1;
    }
    if (overflow) return 0;
    if (c == 'q') {
        memcpy(p, &x, 8);
    } else if (c == 'i') {
        if (x < -2147483648LL || x > 2147483647LL) return 0;
        int32_t y = (int32_t)x;
        memcpy(p, &y, 4);
    } else if (c == 'I') {
        if (x < 0 || x > 4294967295LL) return 0;
        uint32_t y = (uint32_t)x;
        memcpy(p, &y, 4);
    } else {
        return 0;
    }
    return 1;
}

static void direct_free(PyObject *capsule) {
    Direct *d = (Direct *)PyCapsule_GetPointer(capsule, DIRECT);
    if (d == NULL) return;
    Py_XDECREF(d->fallback);
    Py_XDECREF(d->stream_getter);
    Py_XDECREF(d->device);
    Py_XDECREF(d->pack_into);
    Py_XDECREF(d->buffer);
    Py_XDECREF(d->zero);
    PyMem_Free(d);
}

static PyObject *make_direct(PyObject *self, PyObject *args) {
    PyObject *fallback, *function, *block, *shared, *getter, *device, *pack_into, *buffer, *params, *positions;
    PyObject *offsets = NULL, *buf_address = NULL;
    const char *codes = "";
    Py_ssize_t codes_len = 0, buf_size = 0;
    unsigned long owner;
    Py_ssize_t n_extra, n_values;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOO!knn|s#O!On", &fallback, &function, &block, &shared, &getter, &device,
                          &pack_into, &buffer, &params, &PyTuple_Type, &positions, &owner, &n_extra, &n_values,
                          &codes, &codes_len, &PyTuple_Type, &offsets, &buf_address, &buf_size))
        return NULL;
    Py_ssize_t npos = PyTuple_GET_SIZE(positions);
    if (npos + n_extra + 2 > DIRECT_MAX_ARGS || n_values > DIRECT_MAX_ARGS || n_extra < 0) {
        PyErr_SetString(PyExc_ValueError, "make_direct: too many kernel arguments");
        return NULL;
    }
    Direct *d = (Direct *)PyMem_Calloc(1, sizeof(Direct));
    if (d == NULL) return PyErr_NoMemory();
    if (!as_ptr(function, &d->function) || !as_ptr(params, &d->params) || !as_uint(block, &d->block) ||
        !as_uint(shared, &d->shared)) {
        PyMem_Free(d);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < npos; i++) {
        Py_ssize_t p = PyLong_AsSsize_t(PyTuple_GET_ITEM(positions, i));
        if (p == -1 && PyErr_Occurred()) {
            PyMem_Free(d);
            return NULL;
        }
        if (p < 0 || p >= n_values) {
            PyMem_Free(d);
            PyErr_SetString(PyExc_ValueError, "make_direct: a position outside the values");
            return NULL;
        }
        d->pos[i] = p;
    }
    d->npos = npos;
    if (codes_len == npos && offsets != NULL && PyTuple_GET_SIZE(offsets) == npos && buf_address != NULL &&
        buf_size > 0) {
        void *b;
        d->c_pack = as_ptr(buf_address, &b);
        d->buf = (char *)b;
        d->buf_size = buf_size;
        for (Py_ssize_t i = 0; i < npos && d->c_pack; i++) {
            d->codes[i] = codes[i];
            d->offsets[i] = PyLong_AsSsize_t(PyTuple_GET_ITEM(offsets, i));
            if (d->offsets[i] < 0 || d->offsets[i] + 8 > buf_size || !strchr("QqiI", codes[i])) d->c_pack = 0;
        }
        if (PyErr_Occurred()) {
            PyMem_Free(d);
            return NULL;
        }
    }
    d->n_extra = n_extra;
    d->n_values = n_values;
    d->owner = owner;
    d->zero = PyLong_FromLong(0);
    if (d->zero == NULL) {
        PyMem_Free(d);
        return NULL;
    }
    Py_INCREF(fallback);
    d->fallback = fallback;
    Py_INCREF(getter);
    d->stream_getter = getter;
    Py_INCREF(device);
    d->device = device;
    Py_INCREF(pack_into);
    d->pack_into = pack_into;
    Py_INCREF(buffer);
    d->buffer = buffer;
    PyObject *capsule = PyCapsule_New(d, DIRECT, direct_free);
    if (capsule == NULL) {
        /* direct_free is not called: release by hand */
        Py_DECREF(fallback);
        Py_DECREF(getter);
        Py_DECREF(device);
        Py_DECREF(pack_into);
        Py_DECREF(buffer);
        Py_DECREF(d->zero);
        PyMem_Free(d);
    }
    return capsule;
}

static PyObject *direct_fallback(Direct *d, PyObject *const *args, Py_ssize_t nargs) {
    /* args[1:] are (gx, v0, ...): the Python launch with every check */
    return PyObject_Vectorcall(d->fallback, args + 1, nargs - 1, NULL);
}

static PyObject *launch_direct(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 2) {
        PyErr_SetString(PyExc_TypeError, "launch_direct(capsule, gx, *values)");
        return NULL;
    }
    Direct *d = (Direct *)PyCapsule_GetPointer(args[0], DIRECT);
    if (d == NULL) return NULL;
    if (nargs - 2 != d->n_values || PyThread_get_thread_ident() != d->owner || (cu_launch == NULL && !resolve()))
        return direct_fallback(d, args, nargs);
    unsigned gx;
    if (!as_uint(args[1], &gx)) {
        PyErr_Clear();
        return direct_fallback(d, args, nargs);
    }
    PyObject *s = PyObject_CallOneArg(d->stream_getter, d->device);
    if (s == NULL) {
        PyErr_Clear();
        return direct_fallback(d, args, nargs);
    }
    void *stream = PyLong_AsVoidPtr(s);
    Py_DECREF(s);
    if (stream == NULL && PyErr_Occurred()) {
        PyErr_Clear();
        return direct_fallback(d, args, nargs);
    }
    int packed = 0;
    if (d->c_pack) { /* every argument a pointer or an integer in range: written here */
        memset(d->buf, 0, (size_t)d->buf_size);
        packed = 1;
        for (Py_ssize_t i = 0; i < d->npos && packed; i++)
            packed = pack_int(d->codes[i], args[2 + d->pos[i]], d->buf + d->offsets[i]);
    }
    if (!packed) {
        PyObject *stack[DIRECT_MAX_ARGS];
        Py_ssize_t n = 0;
        stack[n++] = d->buffer;
        stack[n++] = d->zero;
        for (Py_ssize_t i = 0; i < d->npos; i++) stack[n++] = args[2 + d->pos[i]];
        for (Py_ssize_t i = 0; i < d->n_extra; i++) stack[n++] = d->zero;
        PyObject *r = PyObject_Vectorcall(d->pack_into, stack, n, NULL);
        if (r == NULL) { /* an argument the fast pack cannot take: the Python path converts it or explains */
            PyErr_Clear();
            return direct_fallback(d, args, nargs);
        }
        Py_DECREF(r);
    }
    int err;
    Py_BEGIN_ALLOW_THREADS
    err = cu_launch(d->function, gx, 1, 1, d->block, 1, 1, d->shared, stream, (void **)d->params, NULL);
    Py_END_ALLOW_THREADS
    if (err != 0) return direct_fallback(d, args, nargs); /* nothing was launched: the Python path retries */
    Py_RETURN_NONE;
}

static PyObject *set_launch_function(PyObject *self, PyObject *arg) {
    /* tests: a stand-in with cuLaunchKernel's C signature (an address), or 0 to look libcuda's up again */
    void *f;
    if (!as_ptr(arg, &f)) return NULL;
    cu_launch = (launch_fn)f;
    why_not[0] = 0;
    Py_RETURN_NONE;
}

static PyObject *available(PyObject *self, PyObject *unused) {
    resolve();
    return PyUnicode_FromString(why_not);
}

static PyMethodDef methods[] = {
    {"launch", (PyCFunction)(void (*)(void))launch, METH_FASTCALL,
     "launch(function, gx, gy, gz, block, shared, stream, params) -> CUresult: cuLaunchKernel with ints."},
    {"available", available, METH_NOARGS, "'' when libcuda's cuLaunchKernel was found, else why not."},
    {"set_launch_function", set_launch_function, METH_O,
     "Tests: call this address (cuLaunchKernel's C signature) instead of libcuda's; 0 restores."},
    {"make_direct", make_direct, METH_VARARGS, "The state of a direct launch (see the source's header)."},
    {"launch_direct", (PyCFunction)(void (*)(void))launch_direct, METH_FASTCALL,
     "launch_direct(capsule, gx, *values): the JIT's relaunch without a Python frame."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_cuda_launch",
                                    "cuLaunchKernel from C (see the source's header).", -1, methods};

PyMODINIT_FUNC PyInit__cuda_launch(void) { return PyModule_Create(&module); }
