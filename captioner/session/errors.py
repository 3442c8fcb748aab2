"""Why a caption session stops, as one exception tree.

Hierarchy (``str()`` is a sentence a user can read)::

    CaptionerError
    └── SessionError
        └── SessionFailed    the session cannot go on: bad credentials, unknown model,
                             a refused endpoint after its retry budget, a server that
                             refuses the session

Faults the session recovers from (drops, stalls, impossible text, context limits,
transient refusals) never surface as exceptions: they show as status changes and
counts in :class:`~captioner.session.caption_session.SessionStats`.
"""

from __future__ import annotations

from captioner.errors import CaptionerError


class SessionError(CaptionerError):
    """Root of caption session failures."""


class SessionFailed(SessionError):
    """The session cannot go on (bad credentials, unknown model, refused endpoint)."""
