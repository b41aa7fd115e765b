"""A FastMCP 4 server offering the Skills extension (SEP-2640) over stdio, for the Skills tests:
`python fastmcp_skills_server.py NAME`. It serves the skills of `tests/sdk/skills/NAME/`: the
servers `a` and `b` each have a skill `review`, so they share every `skill://` URI while their
skills' words differ. Its one tool, `whoami`, names it.
"""

import sys
from pathlib import Path

from fastmcp import FastMCP
from fastmcp.server.providers.skills import SkillsDirectoryProvider
from fastmcp.skills.extension import SkillsExtension

NAME = sys.argv[1]

mcp = FastMCP(f"skills-{NAME}")
provider = SkillsDirectoryProvider(
    roots=Path(__file__).parent / "skills" / NAME, supporting_files="resources", experimental_skills=True
)
mcp.add_provider(provider)
mcp.add_extension(SkillsExtension(providers=[provider]))


@mcp.tool
def whoami() -> str:
    """Names this server."""
    return NAME


if __name__ == "__main__":
    mcp.run(show_banner=False)
