"""Print pip constraints pinning each base dependency of pyproject.toml to its lower bound.

    python .ci/lowest.py pyproject.toml > lowest.txt
    pip install -c lowest.txt -e .

A requirement ``name>=X`` (possibly with an upper bound too) becomes ``name==X``; one without a
lower bound is left to pip. So CI installs exactly the oldest versions the bounds claim to work with.
"""

from __future__ import annotations

import re
import sys
import tomllib


def lowest(requirements: list[str]) -> list[str]:
    out = []
    for req in requirements:
        m = re.match(r"\s*([A-Za-z0-9_.-]+)\s*(?:\[[^\]]*\])?\s*([^;]*)", req)
        if m is None:
            continue
        name, spec = m.group(1), m.group(2)
        low = re.search(r">=\s*([0-9][0-9A-Za-z.]*)", spec)
        if low:
            out.append(f"{name}=={low.group(1)}")
    return out


def main(argv: list[str]) -> int:
    with open(argv[1], "rb") as fh:
        project = tomllib.load(fh)["project"]
    print("\n".join(lowest(project["dependencies"])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
