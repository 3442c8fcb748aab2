import json
import logging
import logging.handlers
import re
import secrets
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import ClassVar

import boto3
import pytest

from captioner import logs

# --- third-party debug logs: botocore with -v against a local moto server -----------------


@pytest.fixture
def debug_log(request, tmp_path, monkeypatch):
    """setup_logging(2) into a fresh folder (or the verbosity given as the fixture's
    parameter); yields the file's path and a function returning its text."""
    folder = tmp_path / "logs" / "Captioner"
    monkeypatch.setenv("CAPTIONER_LOG_DIR", str(folder))
    root = logging.getLogger()
    saved = root.handlers[:], getattr(root, "_captioner_configured", False), root.level
    root._captioner_configured = False
    path = logs.setup_logging(getattr(request, "param", 2))

    def text() -> str:
        for handler in root.handlers:
            handler.flush()
        return path.read_text(encoding="utf-8")

    try:
        yield path, text
    finally:
        for handler in root.handlers[:]:
            if handler not in saved[0]:
                root.removeHandler(handler)
                handler.close()
        root._captioner_configured = saved[1]
        root.setLevel(saved[2])


@pytest.mark.parametrize("debug_log", [0, 1, 2], indirect=True)
def test_debug_records_are_made_only_when_a_handler_writes_them(debug_log, request) -> None:
    """The websockets library logs every frame at debug level: two records per 80 ms of
    audio, made and thrown away when no handler wants them. Below -v nothing writes
    debug lines, so none are made."""
    verbosity = request.node.callspec.params["debug_log"]
    _, text = debug_log
    frames = logging.getLogger("websockets.client")
    assert frames.isEnabledFor(logging.DEBUG) == (verbosity > 0)
    frames.debug("> TEXT frame %d", 1)
    frames.info("= connected")
    assert ("> TEXT frame 1" in text()) == (verbosity > 0)
    assert "= connected" in text()


def test_file_log_redacts_registered_secrets_from_any_logger(debug_log):
    _path, text = debug_log
    logs.REDACTOR.add("AKIAVERYSECRETVALUE42")
    # a logger created after set-up, as SDKs do lazily; no key name gives this one away
    logging.getLogger("smithy_http.brand.new").debug("signing with %s", "AKIAVERYSECRETVALUE42")
    log = text()
    assert "signing with ***" in log
    assert "AKIAVERYSECRETVALUE42" not in log


class FakeSso(BaseHTTPRequestHandler):
    """AWS IAM Identity Center's portal and OIDC token answers (moto has neither)."""

    answers: ClassVar[dict[str, dict]] = {}

    def _answer(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.dumps(self.answers["token" if self.path.startswith("/token")
                                        else "role"]).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *args) -> None:
        pass


def fresh() -> str:
    """A secret no test registered with the redactor: only the patterns can catch it."""
    return "S3cr3t" + secrets.token_hex(16)


def test_botocore_debug_lines_carry_no_credentials(debug_log, moto_url) -> None:
    _path, text = debug_log
    session_token, hf_token, api_key = fresh(), "hf_" + secrets.token_hex(12), fresh()
    session = boto3.Session(aws_access_key_id="AKIAIOSFODNN7EXAMPLE",
                            aws_secret_access_key=fresh(), aws_session_token=session_token,
                            region_name="us-east-1")
    sts = session.client("sts", endpoint_url=moto_url)
    assumed = sts.assume_role(RoleArn="arn:aws:iam::123456789012:role/captioner",
                              RoleSessionName="captioner")["Credentials"]
    sagemaker = session.client("sagemaker", endpoint_url=moto_url)
    sagemaker.create_model(  # `captioner endpoint deploy --env HF_TOKEN=… --env …`
        ModelName="captioner-stt", ExecutionRoleArn="arn:aws:iam::123456789012:role/x",
        PrimaryContainer={"Image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/stt:1",
                          "Environment": {"HF_TOKEN": hf_token, "SM_VLLM_API_KEY": api_key,
                                          "SM_VLLM_MAX_MODEL_LEN": "30000"}})
    log = text()
    assert "X-Amz-Security-Token" in log and "Signature=***" in log  # botocore did log
    assert "SM_VLLM_MAX_MODEL_LEN" in log and "30000" in log  # plain values stay
    for secret in (session_token, hf_token, api_key, assumed["SecretAccessKey"],
                   assumed["SessionToken"]):
        assert secret not in log
    assert not re.search(r"Signature=[0-9a-f]{16}", log)


def test_sso_tokens_in_debug_lines_are_redacted(debug_log, aws_env) -> None:
    _path, text = debug_log
    access, refresh, client_secret = fresh(), fresh(), fresh()
    role_secret, role_token = fresh(), fresh()
    FakeSso.answers = {
        "token": {"accessToken": access, "refreshToken": refresh, "tokenType": "Bearer",
                  "expiresIn": 28800},
        "role": {"roleCredentials": {"accessKeyId": "ASIAIOSFODNN7EXAMPLE",
                                     "secretAccessKey": role_secret, "sessionToken": role_token,
                                     "expiration": 1796140000000}}}
    server = HTTPServer(("127.0.0.1", 0), FakeSso)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_port}"
        oidc = boto3.client("sso-oidc", endpoint_url=url, region_name="us-east-1")
        token = oidc.create_token(clientId="c", clientSecret=client_secret,
                                  grantType="refresh_token", refreshToken=refresh)
        sso = boto3.client("sso", endpoint_url=url, region_name="us-east-1")
        role = sso.get_role_credentials(roleName="r", accountId="123456789012",
                                        accessToken=token["accessToken"])
    finally:
        server.shutdown()
        thread.join(10)
    assert role["roleCredentials"]["sessionToken"] == role_token  # the SDK got them
    log = text()
    assert "accessToken" in log and "x-amz-sso_bearer_token" in log  # botocore did log
    for secret in (access, refresh, client_secret, role_secret, role_token):
        assert secret not in log


def test_log_files_and_their_folder_are_private(debug_log) -> None:
    path, text = debug_log
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700
    handler = next(h for h in logging.getLogger().handlers
                   if isinstance(h, logging.handlers.RotatingFileHandler))
    handler.doRollover()
    logging.getLogger("captioner.test").info("= after the rollover")
    assert "after the rollover" in text()
    for file in path.parent.glob("captioner.log*"):
        assert file.stat().st_mode & 0o777 == 0o600, file.name
    assert len(list(path.parent.glob("captioner.log*"))) == 2


def test_patterns_keep_what_is_not_a_secret() -> None:
    line = ("usage prompt_tokens=12 total_tokens: 40; refused a handshake without the "
            "server's token; SignedHeaders=host;x-amz-security-token")
    assert logs.redact_patterns(line) == line
    assert logs.redact_patterns("GET /v1/realtime?token=abcDEF123 HTTP/1.1") == \
        "GET /v1/realtime?token=*** HTTP/1.1"


def test_a_long_unbroken_line_is_redacted_in_linear_time() -> None:
    """SDK debug lines can hold long base64 bodies: the secret-name pattern must not scan
    the rest of a run from every position in it (that took 23 s for 8,000 letters)."""
    import concurrent.futures

    from captioner.logs import redact_patterns

    line = "body=" + "A" * 200_000 + " HF_TOKEN=hf_abcdefghijklmnopqrstu"
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        result = pool.submit(redact_patterns, line).result(timeout=30)  # quadratic: hours
    assert result.endswith("HF_TOKEN=***") and "A" * 200_000 in result
