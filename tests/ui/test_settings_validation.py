"""The settings' field checks say what is wrong in words a newcomer can act on."""

from captioner.ui.settings.validation import access_keys_error


def test_a_short_secret_key_says_how_long_it_is_and_should_be():
    error = access_keys_error("AKIAIOSFODNN7EXAMPLE", "motosecret", stored=False)
    assert error is not None and "has 10 characters" in error and "has 40" in error
    assert access_keys_error("AKIAIOSFODNN7EXAMPLE", "w" * 40, stored=False) is None
