"""A shipping MCP server (stdio) whose side-effecting tool asks the person
where to ship (MCP elicitation) before it ships. Each shipment is a line in
the file named by SHIPPING_EFFECTS, so a test counts the effects across
restarts of the server and of the client."""

import os

from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel, Field

mcp = MCPServer("shipping")


class Address(BaseModel):
    city: str = Field(description="The city to ship to")
    floor: int = Field(default=0, description="The floor")


@mcp.tool()
async def ship(item: str, ctx: Context) -> str:
    """Ships an item, after asking where to."""
    answer = await ctx.elicit(message=f"Where should the {item} go?", schema=Address)
    if answer.action == "accept":
        with open(os.environ["SHIPPING_EFFECTS"], "a", encoding="utf-8") as effects:
            effects.write(f"{item} -> {answer.data.city}\n")
            effects.flush()
            os.fsync(effects.fileno())
        return f"shipped the {item} to {answer.data.city}"
    return f"the {item} was not shipped: the person chose {answer.action}"


if __name__ == "__main__":
    mcp.run()
