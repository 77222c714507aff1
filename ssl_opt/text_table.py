"""Plain-text tables for the command line."""

from __future__ import annotations


def text_table(rows: list[list], header: list[str]) -> str:
    """Left-aligned columns two spaces apart, the header underlined with dashes."""
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=True)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = [fmt.format(*header), fmt.format(*("-" * w for w in widths))]
    lines += [fmt.format(*map(str, r)) for r in rows]
    return "\n".join(lines)
