import logging

from captioner import logs


def test_file_log_redacts_secrets_from_any_logger(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPTIONER_LOG_DIR", str(tmp_path))
    root = logging.getLogger()
    saved = root.handlers[:], getattr(root, "_captioner_configured", False)
    root._captioner_configured = False
    try:
        path = logs.setup_logging(2)
        logs.REDACTOR.add("AKIAVERYSECRETTOKEN42")
        # a logger created after set-up, as SDKs do lazily
        logging.getLogger("smithy_http.brand.new").debug("header x-amz-security-token: %s",
                                                          "AKIAVERYSECRETTOKEN42")
        for handler in root.handlers:
            handler.flush()
        text = path.read_text()
        assert "x-amz-security-token: ***" in text
        assert "AKIAVERYSECRETTOKEN42" not in text
    finally:
        for handler in root.handlers[:]:
            if handler not in saved[0]:
                root.removeHandler(handler)
                handler.close()
        root._captioner_configured = saved[1]
