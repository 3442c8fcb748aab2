"""The caption lines behind the golden export files."""

from captioner.realtime.captions import CaptionLine, LineKind

LINES = [
    CaptionLine("Hello and welcome to the meeting.", 0.5, 2.8),
    CaptionLine("This is a much longer caption line that will certainly need to be split "
                "across more than one cue because it is long.", 3.0, 11.0),
    CaptionLine("Yes.", 11.2, 11.4),
    CaptionLine("[5 s of audio not transcribed]", 11.9, 16.9, kind=LineKind.GAP),
    CaptionLine("Thanks, bye & see you <soon>", 17.0, 17.0, kind=LineKind.TYPED),
    CaptionLine("One hour later.", 3600.25, 3601.5),
]

# A call in two-stream mode, in the order the lines were finalized (not spoken):
# "You" finalizes its first line after "Others" began speaking.
CALL = [
    CaptionLine("Can everyone hear me?", 0.4, 1.9, speaker="Others"),
    CaptionLine("Yes, loud and clear.", 1.2, 2.6, speaker="You"),
    CaptionLine("Great, then let us start with the budget for the next quarter, "
                "which is a long line.", 3.0, 9.0, speaker="Others"),
    CaptionLine("Sounds good <to> me & the team.", 9.5, 11.0, speaker="You"),
]
