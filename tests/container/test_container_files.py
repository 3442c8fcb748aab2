"""The image's static parts: Dockerfile, pinned bridge deps, scripts, self-containment."""

from __future__ import annotations

import ast
import json
import shlex
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

CONTAINER = Path(__file__).resolve().parents[2] / "container"
BASE = (
    "public.ecr.aws/deep-learning-containers/"
    "vllm:0.17.1-gpu-py312-cu129-ubuntu22.04-sagemaker-v1.0-soci"
)


def dockerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, with comments dropped and continuations joined."""
    instructions: list[tuple[str, str]] = []
    pending = ""
    for raw in (CONTAINER / "Dockerfile").read_text().splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        keyword, _, args = (pending + line).partition(" ")
        instructions.append((keyword.upper(), args.strip()))
        pending = ""
    assert not pending, "Dockerfile ends inside a continuation"
    return instructions


def args_of(keyword: str) -> list[str]:
    return [args for kw, args in dockerfile() if kw == keyword]


def test_base_image_is_the_vllm_dlc_by_default():
    instructions = dockerfile()
    assert instructions[0] == ("ARG", f"BASE_IMAGE={BASE}")
    assert instructions[1] == ("FROM", "${BASE_IMAGE}")


def test_image_carries_the_bidirectional_streaming_label():
    assert "com.amazonaws.sagemaker.capabilities.bidirectional-streaming=true" in args_of("LABEL")


def test_image_exposes_8080_and_checks_ping():
    assert args_of("EXPOSE") == ["8080"]
    (healthcheck,) = args_of("HEALTHCHECK")
    options, _, command = healthcheck.partition(" CMD ")
    assert "--start-period=1200s" in options.split()
    assert "http://127.0.0.1:8080/ping" in command


def test_entrypoint_is_the_copied_script_in_exec_form():
    (entrypoint,) = args_of("ENTRYPOINT")
    assert json.loads(entrypoint) == ["/opt/captioner-bridge/entrypoint.sh"]
    copies = [shlex.split(args) for args in args_of("COPY")]
    assert ["entrypoint.sh", "/opt/captioner-bridge/entrypoint.sh"] in copies
    assert ["bridge/", "/opt/captioner-bridge/bridge/"] in copies
    for *sources, _ in copies:
        for source in sources:
            assert (CONTAINER / source).exists(), f"COPY source {source} is missing"


def test_bridge_dependencies_are_pinned_to_the_tested_versions_with_hashes():
    pins, hashes = {}, {}
    name = ""
    for line in (CONTAINER / "requirements.txt").read_text().splitlines():
        line = line.strip().removesuffix("\\").strip()
        if line.startswith("--hash=sha256:"):
            hashes.setdefault(name, []).append(line)
        elif line and not line.startswith("#"):
            name, sep, pinned = line.partition("==")
            assert sep, f"unpinned requirement: {line}"
            pins[name] = pinned
    assert {"starlette", "uvicorn", "websockets"} <= pins.keys()
    assert {name: version(name) for name in pins} == pins
    assert hashes.keys() == pins.keys()  # every pin has its hashes
    (install,) = [a for a in args_of("RUN") if "pip install" in a]
    assert "-r /opt/captioner-bridge/requirements.txt" in install
    assert "--require-hashes" in install
    assert "--target /opt/captioner-bridge/lib" in install


def test_scripts_are_shellcheck_clean():
    result = subprocess.run(
        ["shellcheck", "entrypoint.sh", "build_and_push.sh"],
        cwd=CONTAINER,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout


def test_bridge_imports_nothing_from_captioner():
    for path in (CONTAINER / "bridge").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            assert not any(n.split(".")[0] == "captioner" for n in names), path


def run_bridge_import(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Import bridge.main in a fresh interpreter where captioner cannot be imported."""
    code = "import sys; sys.modules['captioner'] = None; import bridge.main; print('ok')"
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=CONTAINER,
        env={"PATH": "/usr/bin:/bin"} | env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_bridge_app_loads_without_captioner():
    result = run_bridge_import({"BRIDGE_BACKEND_URL": "ws://127.0.0.1:8081/v1/realtime"})
    assert (result.returncode, result.stdout) == (0, "ok\n"), result.stderr


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"BRIDGE_PING_TIMEOUT": "soon"}, "BRIDGE_PING_TIMEOUT must be a number of seconds"),
        ({"BRIDGE_BACKEND_URL": "http://x/v1"}, "backend URL must be ws:// or wss://"),
    ],
)
def test_bad_bridge_settings_stop_it_with_one_readable_line(env, message):
    result = run_bridge_import(env)
    assert result.returncode == 1
    assert result.stderr.startswith(f"bridge: {message}")
    assert "Traceback" not in result.stderr


# --- build_and_push.sh with stand-ins for aws and docker ----------------------

AWS = """#!/bin/sh
printf 'aws %s\\n' "$*" >> "$CALLS"
case "$*" in
  "ecr describe-repositories"*) exit 254 ;;
  "ecr get-login-password"*) echo token-123 ;;
esac
"""
DOCKER = """#!/bin/sh
printf 'docker %s\\n' "$*" >> "$CALLS"
if [ "$1" = login ]; then printf 'stdin %s\\n' "$(cat)" >> "$CALLS"; fi
"""


def build_and_push(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, text in (("aws", AWS), ("docker", DOCKER)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    calls = tmp_path / "calls.txt"
    result = subprocess.run(
        ["bash", str(CONTAINER / "build_and_push.sh"), *args],
        env={"PATH": f"{bin_dir}:/usr/bin:/bin", "CALLS": str(calls)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    return result, calls


def test_build_and_push_creates_repo_logs_in_builds_tags_pushes(tmp_path):
    result, calls = build_and_push(tmp_path, "eu-west-1", "123456789012", "stt", "v1")
    registry = "123456789012.dkr.ecr.eu-west-1.amazonaws.com"

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == f"{registry}/stt:v1"
    lines = calls.read_text().splitlines()
    assert lines[:2] == [
        "aws ecr describe-repositories --region eu-west-1 --repository-names stt",
        "aws ecr create-repository --region eu-west-1 --repository-name stt",
    ]
    # get-login-password | docker login run side by side: their log order varies.
    assert sorted(lines[2:4]) == [
        "aws ecr get-login-password --region eu-west-1",
        f"docker login --username AWS --password-stdin {registry}",
    ]
    assert lines[4:] == [
        "stdin token-123",
        f"docker build --platform linux/amd64 -t stt:v1 {CONTAINER}",
        f"docker tag stt:v1 {registry}/stt:v1",
        f"docker push {registry}/stt:v1",
    ]


@pytest.mark.parametrize(
    ("args", "status", "message"),
    [
        ((), 2, "usage: build_and_push.sh REGION ACCOUNT_ID"),
        (("us-east-1",), 2, "usage: build_and_push.sh REGION ACCOUNT_ID"),
        (("us-east-1", "12345"), 2, "ACCOUNT_ID must be 12 digits"),
        (("Frankfurt", "123456789012"), 2, "'Frankfurt' is not an AWS region"),
    ],
)
def test_build_and_push_rejects_bad_arguments_with_usage(tmp_path, args, status, message):
    result, calls = build_and_push(tmp_path, *args)
    assert result.returncode == status
    assert message in result.stderr
    assert not calls.exists()  # nothing was run against AWS or docker


def test_build_and_push_help_prints_usage(tmp_path):
    result, _ = build_and_push(tmp_path, "--help")
    assert result.returncode == 0
    assert "REPOSITORY   ECR repository name (default: captioner-stt)" in result.stdout
