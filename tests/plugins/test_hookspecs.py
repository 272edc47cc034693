"""The plugin manager and hook specs."""
import pluggy

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
