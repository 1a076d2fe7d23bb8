"""The documentation: the site builds with no warning (a broken link, page or anchor fails),
the README stays a short front page whose links resolve."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The README is the front door; everything longer belongs in docs/.
README_MAX_LINES = 250


def test_docs__build_strictly(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    assert (tmp_path / "site" / "results" / "index.html").is_file()
    assert (tmp_path / "site" / "models" / "ppo_2p" / "index.html").is_file()  # cards served


def test_readme__is_a_short_front_page():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"


def test_readme__relative_links_resolve():
    text = (ROOT / "README.md").read_text()
    targets = [target for target in re.findall(r"\]\(([^)\s#]+)(?:#[^)\s]*)?\)", text)
               if not re.match(r"^[a-z][a-z0-9+.-]*:", target)]
    assert targets, "the README links into docs/"
    missing = [target for target in targets if not (ROOT / target).exists()]
    assert not missing, f"README.md links to missing files: {missing}"
