"""matplotlib, which cosim's figures need and nothing else does: loaded on the Agg backend (no
display) when a figure is drawn, with one line saying how to install it when it is missing."""

from __future__ import annotations

from cosim.errors import CosimError

#: how to get matplotlib (the package itself: an extra's name would need cosim installed from the index)
INSTALL_HINT = "pip install matplotlib"


def pyplot(needed_by: str | None = None):
    """`matplotlib.pyplot` on the Agg backend. Without matplotlib: None, or when `needed_by` names
    what cannot run without it, a `CosimError` saying so with the install hint (exit 2 in the CLI)."""
    try:
        import matplotlib
    except ImportError:
        if needed_by is None:
            return None
        raise CosimError(f"{needed_by} needs matplotlib: {INSTALL_HINT}") from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt
