"""`cosim policies list` and `cosim policies show NAME`: the registered scheduling policies."""

from __future__ import annotations


import typer



def _fmt(value) -> str:
    if value is None:
        return "none"
    if isinstance(value, tuple):
        return ",".join(_fmt(v) for v in value) or "(empty)"
    if isinstance(value, float) and value.is_integer():
        return str(int(value)) if abs(value) < 1e15 else repr(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="Scheduling policies: list them and show their parameters.", no_args_is_help=True)
    app.add_typer(group, name="policies")

    @group.command("list")
    def list_cmd() -> None:
        """Every registered policy: name, one-line description, parameters with defaults."""
        import policies

        for name in policies.POLICIES.names():
            pol = policies.make(name)
            flags = " [oracle]" if pol.needs else ""
            typer.echo(f"{name}{flags}: {policies.describe(name)}")
            params = ", ".join(f"{p.name}={_fmt(p.default)}" for p in policies.params_of(name))
            typer.echo(f"    {params}")

    @group.command("show")
    def show_cmd(name: str = typer.Argument(..., help="policy name (see `cosim policies list`)")) -> None:
        """Full description of one policy and its parameters (type, default, help)."""
        import inspect

        import policies

        cls = policies.POLICIES.get(name)
        pol = policies.make(name)
        typer.echo(f"{name}: {policies.describe(name)}")
        typer.echo(f"  called on events: {'yes' if pol.event_driven else 'no'}; "
                   f"interval: {_fmt(pol.interval_s)} s; needs: {', '.join(sorted(pol.needs)) or 'nothing'}")
        doc = inspect.cleandoc(cls.__doc__ or "").split("\n", 1)
        if len(doc) > 1 and doc[1].strip():
            typer.echo("")
            typer.echo(doc[1].strip("\n"))
        typer.echo("")
        typer.echo("parameters (name: type = default):")
        for p in policies.params_of(name):
            choices = f" (one of: {', '.join(map(str, p.choices))})" if p.choices else ""
            typer.echo(f"  {p.name}: {p.type} = {_fmt(p.default)}{choices}")
            typer.echo(f"      {p.help}")
