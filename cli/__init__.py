"""The `cosim` command line (typer). Each module here adds one command group via `register`."""

import cosim  # noqa: F401  first: OpenBLAS' kernels and threads are set before numpy loads (cosim.blas)
