"""``tritium.plugins.missing_modules``: what a backend's ``missing`` reports, probed without importing."""
import sys

from tritium.plugins import missing_modules


def test_present_modules_report_nothing():
    assert missing_modules("json", "email.mime", pip="pip install x") is None


def test_an_absent_module_reports_the_pip_command():
    assert missing_modules("json", "no_such_module_xyz", pip="pip install 'tritium[foo]'") == \
        "pip install 'tritium[foo]'"
    assert missing_modules("no_such_package_xyz.sub", pip="pip install y") == "pip install y"


def test_probing_does_not_import_the_module():
    sys.modules.pop("colorsys", None)
    assert missing_modules("colorsys", pip="pip install z") is None
    assert "colorsys" not in sys.modules
