"""MkDocs hook: the model cards and the experiment reports are part of the site.

The docs live in ``docs/``, the model cards in ``models/`` and the reports in ``results/``,
and every page links to the others by its path in the repository (``../models/ppo_2p.md``
from ``docs/``), so the links also work where the repository is browsed as files. This
hook adds ``models/*.md``, ``results/**`` and ``configs/**`` to the site under the same
relative paths (``models/ppo_2p.md``, ...) and rewrites each page's relative links from
repository paths to site paths, so ``mkdocs build --strict`` checks every such link: a
link to a missing card, report or page fails the build.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[1]
#: Repository folders served beside the docs, with the files of each that are.
EXTRA = {"models": "*.md", "results": "**/*", "configs": "**/*.yaml"}
#: A Markdown link or image target: ``](target)`` or ``](target "title")``.
LINK = re.compile(r"\]\(([^)\s]+)(\s+\"[^\"]*\")?\)")


def on_files(files, config):
    """Add the model cards, reports and configs to the site's files."""
    for folder, pattern in EXTRA.items():
        for path in sorted((ROOT / folder).glob(pattern)):
            if path.is_file():
                files.append(File(path.relative_to(ROOT).as_posix(), str(ROOT),
                                  config["site_dir"], config["use_directory_urls"]))
    return files


def _site_path(repo_path: str) -> str:
    """Where a repository path lives on the site: ``docs/x.md`` -> ``x.md``, others as they are."""
    return repo_path[len("docs/"):] if repo_path.startswith("docs/") else repo_path


def on_page_markdown(markdown, page, config, files):
    """Rewrite the page's relative links from repository paths to site paths."""
    source = Path(page.file.abs_src_path).resolve().relative_to(ROOT).as_posix()
    here = posixpath.dirname(page.file.src_uri)

    def rewrite(match: re.Match) -> str:
        target, title = match.group(1), match.group(2) or ""
        if re.match(r"^[a-z][a-z0-9+.-]*:|^#|^/", target):  # a URL, an anchor, an absolute path
            return match.group(0)
        path, _, anchor = target.partition("#")
        repo_path = posixpath.normpath(posixpath.join(posixpath.dirname(source), path))
        site = posixpath.relpath(_site_path(repo_path), here or ".")
        return f"]({site}{'#' + anchor if anchor else ''}{title})"

    return LINK.sub(rewrite, markdown)
