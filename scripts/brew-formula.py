"""Write the Homebrew formula's version and checksums from a release's SHA256SUMS.

    python3 scripts/brew-formula.py VERSION SHA256SUMS [Formula/arcane-mcp.rb]

Each `url` of the formula names a release archive (arcane-mcp-vVERSION-TRIPLE.tar.gz); its
`sha256` line below is set to that archive's sum. An archive missing from SHA256SUMS stops
the script: a formula must never point at a file it has no checksum for.
"""

import re
import sys
from pathlib import Path


def main() -> None:
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    version, sums_path = sys.argv[1], Path(sys.argv[2])
    formula = Path(sys.argv[3] if len(sys.argv) == 4 else "Formula/arcane-mcp.rb")
    if not re.fullmatch(r"\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?", version):
        sys.exit(f"brew-formula.py: '{version}' is not a version like 1.2.3")
    sums = {}
    for line in sums_path.read_text().splitlines():
        digest, _, name = line.partition("  ")
        sums[Path(name.strip()).name] = digest
    text = re.sub(r'(?m)^(  version )"[^"]*"', rf'\g<1>"{version}"', formula.read_text())
    text = re.sub(r"/download/v[^/]+/arcane-mcp-v[^-]+-", f"/download/v{version}/arcane-mcp-v{version}-", text)

    def fill(match: re.Match) -> str:
        archive = match.group(2).rsplit("/", 1)[1]
        if archive not in sums or not re.fullmatch(r"[0-9a-f]{64}", sums[archive]):
            sys.exit(f"brew-formula.py: {sums_path} has no SHA-256 for {archive}")
        return f'{match.group(1)}"{sums[archive]}"'

    text, n = re.subn(r'(url "([^"]+)"\n\s+sha256 )"[^"]*"', fill, text)
    if n == 0:
        sys.exit(f"brew-formula.py: no url/sha256 pair in {formula}")
    formula.write_text(text)
    print(f"{formula}: version {version}, {n} archives")


if __name__ == "__main__":
    main()
