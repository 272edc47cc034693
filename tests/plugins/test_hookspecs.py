"""The plugin manager and hook specs."""
import pluggy
import pytest

import tritium.plugins as plugins
from tritium.runtime import driver


def test_hook_specs():
    pm = plugins.get_plugin_manager()
    assert pm.project_name == "tritium"
    for name in ("tritium_backends", "tritium_add_stages", "tritium_stage_output", "tritium_launch_enter",
                 "tritium_launch_exit"):
        spec = getattr(pm.hook, name).spec
        assert spec is not None and spec.function.__doc__, name
    assert isinstance(plugins.hookimpl, pluggy.HookimplMarker)


def test_manager_is_created_once():
    assert plugins.get_plugin_manager() is plugins.get_plugin_manager()


def test_first_party_backends_register_through_entry_points():
    pm = plugins.get_plugin_manager()
    assert pm.has_plugin("nvidia") and pm.has_plugin("amd")
    bs = driver.backends()
    assert bs["cuda"].priority == 20 and bs["hip"].priority == 10
    assert list(bs).index("cuda") < list(bs).index("hip")  # highest priority first


def test_register_and_unregister_refresh_backends():
    from tritium.compiler.backend import Backend

    class P:
        @plugins.hookimpl
        def tritium_backends(self):
            return [Backend("ephemeral", 0, object, object)]

    p = P()
    plugins.register(p)
    try:
        assert "ephemeral" in driver.backends()
    finally:
        plugins.unregister(p)
    assert "ephemeral" not in driver.backends()


def test_misspelled_hook_is_an_error_naming_plugin_and_hook():
    from tritium.errors import PluginError

    class Typo:
        @plugins.hookimpl
        def tritium_lanch_enter(self, kernel, grid, args):
            pass

    t = Typo()
    with pytest.raises(PluginError, match=r"plugin 'typo-plugin' implements unknown hook 'tritium_lanch_enter' "
                                          r"\(did you mean 'tritium_launch_enter'\?\)"):
        plugins.register(t, name="typo-plugin")
    pm = plugins.get_plugin_manager()
    assert not pm.is_registered(t) and not pm.has_plugin("typo-plugin")
    pm.check_pending()  # nothing of it left behind
    with pytest.raises(PluginError, match="unknown hook 'tritium_lanch_enter'"):
        pm.register(t)  # straight through the plugin manager too


def test_misspelled_hook_in_an_entry_point_makes_the_plugin_unavailable(monkeypatch):
    class EntryPoint:
        name, value = "typo", "tritium_typo.plugin"

        @staticmethod
        def load():
            class Typo:
                @plugins.hookimpl
                def tritium_stage_outptu(self, kernel_name, stage, output):
                    pass
            return Typo()

    monkeypatch.setattr(plugins, "_entry_points", lambda: [EntryPoint])
    plugins.reset()
    try:
        broken = plugins.unavailable_plugins()
        assert "unknown hook 'tritium_stage_outptu'" in broken["typo"]
        assert "did you mean 'tritium_stage_output'" in broken["typo"]
        assert not plugins.get_plugin_manager().has_plugin("typo")
    finally:
        monkeypatch.undo()
        plugins.reset()
    assert "typo" not in plugins.unavailable_plugins()


def test_launch_hooks_state_follows_registration():
    pm = plugins.get_plugin_manager()
    assert pm.launch_hooks is None and plugins.launch_hooks() is None

    class Exit:
        @plugins.hookimpl
        def tritium_launch_exit(self, kernel):
            pass

    e = Exit()
    pm.register(e)
    try:
        enter, leave = plugins.launch_hooks()
        assert enter is pm.hook.tritium_launch_enter and leave is pm.hook.tritium_launch_exit
    finally:
        pm.unregister(e)
    assert plugins.launch_hooks() is None
