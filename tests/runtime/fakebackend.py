"""A backend that needs neither the frontend nor a device: its stages describe the ASTSource they got."""
from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from tritium.compiler.backend import Backend, BaseCompiler, BaseDriver, BaseOptions, GPUTarget
from tritium.plugins import hookimpl


@dataclass(frozen=True)
class FakeOptions(BaseOptions):
    flavour: str = "plain"


class FakeCompiler(BaseCompiler):
    warp_size = 32

    def __init__(self, rec, name):
        self.rec, self.name = rec, name

    def supports_target(self, target):
        return target.backend == self.name

    def parse_options(self, options):
        return FakeOptions.parse(options, backend=self.name)

    def add_stages(self, stages, options):
        def describe(src, metadata):
            self.rec.compiles.append(src)
            metadata["described"] = True
            return json.dumps({"name": src.name, "signature": src.signature,
                               "constexprs": {k: repr(v) for k, v in src.constexprs.items()},
                               "attrs": src.attrs, "flavour": options.flavour}, sort_keys=True)

        stages["sig"] = describe
        stages["bin"] = lambda text, metadata: text.upper().encode()

    def hash(self):
        return "fake-1"


class FakeDriver(BaseDriver):
    def __init__(self, rec, name, active, reason):
        self.rec, self.name, self.active, self.reason = rec, name, active, reason

    def is_active(self):
        return self.active

    def inactive_reason(self):
        return "" if self.active else self.reason

    def get_current_target(self):
        return GPUTarget(self.name, 1, 32)

    def launch(self, kernel, grid, args):
        self.rec.launches.append((kernel, grid, list(args)))


class FakePlugin:
    """Register with ``tritium.plugins.register(FakePlugin(...))``."""

    def __init__(self, name="fake", priority=1000, active=True, reason="no fake device", missing=None):
        self.name, self.priority, self.active, self.reason, self.missing = name, priority, active, reason, missing
        self.compiles, self.launches = [], []

    @hookimpl
    def tritium_backends(self):
        return [Backend(self.name, self.priority, lambda: FakeCompiler(self, self.name),
                        lambda: FakeDriver(self, self.name, self.active, self.reason), missing=self.missing,
                        description="test backend")]


@pytest.fixture
def register_fake(monkeypatch):
    """``register_fake(**kw)`` -> a registered FakePlugin; all are unregistered at teardown."""
    import tritium.plugins as plugins
    from tritium.runtime import driver

    monkeypatch.delenv("TRITIUM_TARGET", raising=False)
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    made = []

    def make(**kw):
        p = FakePlugin(**kw)
        plugins.register(p, name=f"test-{p.name}-{id(p)}")
        made.append(p)
        return p

    yield make
    for p in made:
        plugins.unregister(p)
    driver.set_active(None)
    driver.reset()


@pytest.fixture
def fake(register_fake, monkeypatch):
    """A registered, active fake backend selected with TRITIUM_TARGET=fake."""
    p = register_fake()
    monkeypatch.setenv("TRITIUM_TARGET", "fake")
    return p
