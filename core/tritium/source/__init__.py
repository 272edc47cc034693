"""A kernel's Python source, below the language and the frontend (only :mod:`tritium.errors` under it):

* :mod:`.files`: where a ``@jit`` function's source is (its file, or the string an ``exec()`` compiled, registered
  under a pseudo file name) and the source text from its decorators on;
* :mod:`.dependencies`: what its code depends on (the ``@jit`` functions it calls, the globals they read) and the
  cache key over them;
* :mod:`.function`: :class:`~.function.JITCallable`, the source half of a ``@jit`` function (parameters, AST,
  cache key, globals check): what the frontend compiles calls to and what the language's own ``@jit`` helpers
  (``tl.randint``, ...) are. :class:`tritium.runtime.jit.JITFunction` adds launching to it.
"""
