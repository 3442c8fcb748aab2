"""Live caption outputs for other apps: a loopback web page (an OBS browser source),
a live text file and a live WebVTT file. Each is off until the user turns it on.

Errors::

    CaptionerError
    └── FeedError          an output could not be written or served (captions go on)
"""

from captioner.feed.errors import FeedError
from captioner.feed.files import LiveTextFile, LiveVttFile
from captioner.feed.state import FeedState
from captioner.feed.web import FeedServer

__all__ = ["FeedError", "FeedServer", "FeedState", "LiveTextFile", "LiveVttFile"]
