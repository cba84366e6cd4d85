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
        """Every registered policy (test and demo policies left out): name, description, parameters with defaults."""
        import policies

        for name in policies.POLICIES.listed():
            pol = policies.make(name)
            flags = " [oracle]" if pol.needs else ""
            typer.echo(f"{name}{flags}: {policies.describe(name)}")
            params = ", ".join(f"{p.name}={_fmt(p.default)}" for p in policies.params_of(name))
            typer.echo(f"    {params}")

    @group.command("show")
    def show_cmd(name: str = typer.Argument(..., help="policy name (see `cosim policies list`)")) -> None:
        """What a policy does, the paper it reproduces, and each parameter: default, unit, source."""
        import textwrap

        import policies
        from policies.config import user_doc

        cfg_cls = policies.POLICIES.get(name).Config
        pol = policies.make(name)
        typer.echo(f"{name}: {policies.describe(name)}")
        if cfg_cls.reference:
            typer.echo(textwrap.fill(f"reference: {cfg_cls.reference}", 100, subsequent_indent="  "))
        every = f"every {_fmt(pol.interval_s)} s" if pol.interval_s else ""
        runs = ("on events" + (f" and {every}" if every else "")) if pol.event_driven else f"{every} only"
        reads = "the duration oracle (clairvoyant: true job durations)" if pol.needs else \
            "no oracle (non-clairvoyant)"
        typer.echo(f"runs: {runs}; reads: {reads}")
        doc = user_doc(cfg_cls)
        if doc:
            typer.echo("")
            typer.echo(doc)
        typer.echo("")
        typer.echo("parameters (name: type = default [unit]):")
        for p in policies.params_of(name):
            unit = f" {p.unit}" if p.unit and p.default is not None else ""
            choices = f" (one of: {', '.join(map(str, p.choices))})" if p.choices else ""
            typer.echo(f"  {p.name}: {p.type} = {_fmt(p.default)}{unit}{choices}")
            typer.echo(textwrap.fill(p.help + (f" [{p.unit}]" if p.unit and p.default is None else ""), 100,
                                     initial_indent="      ", subsequent_indent="      "))
            if p.source:
                typer.echo(textwrap.fill(f"default from: {p.source}", 100, initial_indent="      ",
                                         subsequent_indent="        "))
        typer.echo("")
        typer.echo(f"set with `cosim simulate --set {name}.KEY=VALUE` (repeatable) or a [policies.{name}] "
                   "table in a sweep file")
