"""Whether this machine can open a link in a graphical web browser (over SSH there is usually none)."""

from __future__ import annotations

import webbrowser


def browser_available() -> bool:
    """True when `webbrowser` would open a graphical browser; a console browser (lynx, w3m) would take over this
    terminal, and over SSH there is usually none at all."""
    try:
        browser = webbrowser.get()
    except webbrowser.Error:
        return False
    if isinstance(browser, webbrowser.GenericBrowser) and not isinstance(browser, webbrowser.BackgroundBrowser):
        return False
    return not (isinstance(browser, webbrowser.UnixBrowser) and not browser.background)
