"""The docs' examples run: every ```python block of a page, in order, in one namespace.

Each page runs in a fresh Python process (in a temporary folder, so files its examples save
land there). A block right after a line ``<!-- skip-test -->`` is skipped: it needs an optional
package (Dask, a cluster) that the tests do not assume. Blocks that are not Python say so
(```sh, ```text), so nothing meant to run is left out by a missing label.
"""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = ["README.md", "docs/guide.md", "docs/design.md", "docs/jit.md"]
SKIP = "<!-- skip-test -->"
FENCE = re.compile(r"^```(\S*)\s*$")

RUNNER = """
import json, sys
blocks = json.load(sys.stdin)
namespace = {"__name__": "__main__"}
for path, line, source in blocks:
    exec(compile("\\n" * (line - 1) + source, path, "exec"), namespace)
"""


def fenced_blocks(path: Path) -> list[tuple[str, int, str, bool]]:
    """(language, first line of the code, code, skipped) of every fenced block, in order."""
    lines = path.read_text().splitlines()
    blocks, i = [], 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        before = next((lines[j].strip() for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        blocks.append((opening.group(1), i + 2, "\n".join(lines[i + 1 : end]) + "\n", before == SKIP))
        i = end + 1
    return blocks


@pytest.mark.parametrize("page", PAGES)
def test_every_block_names_its_language(page):
    unlabeled = [line for language, line, _, _ in fenced_blocks(ROOT / page) if not language]
    assert not unlabeled, f"{page}: fenced blocks without a language at lines {unlabeled}"


@pytest.mark.parametrize("page", PAGES)
def test_python_blocks_run(page, tmp_path):
    blocks = [(page, line, code) for language, line, code, skipped in fenced_blocks(ROOT / page)
              if language == "python" and not skipped]
    assert blocks, f"{page} has no Python example"
    done = subprocess.run([sys.executable, "-c", RUNNER], input=json.dumps(blocks), text=True,
                          capture_output=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, f"{page}: an example failed\n{done.stdout}\n{done.stderr}"


def test_few_blocks_are_skipped():
    skipped = [(page, line) for page in PAGES for language, line, _, skip in fenced_blocks(ROOT / page)
               if language == "python" and skip]
    assert len(skipped) <= 3, skipped
