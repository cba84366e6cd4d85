"""The `cosim` command line (typer). Each module here adds one command group via `register`."""
