"""How long a hostile project file keeps a command waiting: settings loaded from ./svgagent.toml (and the user
config file) shaped as the red team's files, each in a fresh directory, timed in this process.

    .venv/bin/python bench/project_files.py

Each line: the case, the seconds load_settings took and how it ended (refused with one line, or loaded).
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

CASES = {
    "x = [[[ 60,000 deep (64 KiB project file)": ("project", "x = " + "[" * 60_000),
    "x = [[[ 200,000 deep, project file": ("project", "x = " + "[" * 200_000),
    "x = [[[ 200,000 deep, user config file": ("user", "x = " + "[" * 200_000),
    "one dotted key of 20,000 parts (40 KB)": ("project", "a." * 20_000 + "k = 1\n"),
    "700 dotted keys of 40 parts (60 KB)": ("project", "".join("a." * 39 + f"k{i} = 1\n" for i in range(700))),
    "1,600 dotted keys of 15 parts (60 KB, within the bounds)": (
        "project",
        "".join(".".join(["p"] * 14) + f".k{i} = {i}\n" for i in range(1600)),
    ),
    "4,000 keys of 15 parts (150 KB user config, within the bounds)": (
        "user",
        "".join(".".join(["p"] * 14) + f".k{i} = {i}\n" for i in range(4000)),
    ),
    "5,000 keys (over the item bound)": ("project", "".join(f"k{i} = {i}\n" for i in range(5000))),
}


def main() -> None:
    with tempfile.TemporaryDirectory() as root:
        os.environ["XDG_CONFIG_HOME"] = str(Path(root) / "config")
        os.environ["XDG_DATA_HOME"] = str(Path(root) / "data")
        from svgagent.core.config.settings import load_settings, user_config_file
        from svgagent.core.scoring.errors import ConfigError

        for n, (case, (where, text)) in enumerate(CASES.items()):
            work = Path(root) / f"case{n}"
            work.mkdir()
            os.chdir(work)
            user = user_config_file()
            user.parent.mkdir(parents=True, exist_ok=True)
            user.unlink(missing_ok=True)
            (work / "svgagent.toml" if where == "project" else user).write_text(text)
            start = time.perf_counter()
            try:
                load_settings()
                ended = "loaded"
            except ConfigError as err:
                ended = "refused: " + str(err).split(": ", 1)[-1][:70]
            print(f"{case:<62} {time.perf_counter() - start:8.4f} s  {ended}")


if __name__ == "__main__":
    main()
