"""Text from outside svgagent made safe to print on a terminal."""

from __future__ import annotations

import re

# C0 controls but tab and newline, DEL, and C1 (0x9b is CSI on terminals that read 8-bit controls)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible(text: str) -> str:
    """``text`` with every control character but tab and newline written as an escape (ESC as ``\\x1b``): what a
    run holds came from models, endpoints and imported files, and must not clear the screen, retitle the window or
    write the clipboard (OSC 52) of whoever prints it."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
