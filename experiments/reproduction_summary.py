"""The reproduction table: every committed report's claims.csv, gathered into one table.

`cosim reproduce --summary` reads `docs/reproductions/<paper>/claims.csv` and
`docs/reproductions/<paper>/<size>/claims.csv` (written by `cosim reproduce` beside its
REPORT.md, `experiments.reproduction_report.CLAIM_COLUMNS`) and writes

- `docs/reproductions/README.md`: per report, the count of each verdict, then one line per
  claim (paper, claim, verdict, how far: cosim's margin over the paper's, the seeds' range);
- the block between `BEGIN` and `END` in the top-level README.md, when the README has it:
  the per-report counts and the median margin ratio (a README without the block is left as it is).

A report folder without claims.csv (written before the claims table existed) is listed as such:
its numbers are in its REPORT.md only, and nothing here reads them back from the prose.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from experiments.compare import LARGEST, NOT_CHECKED, VERDICTS, counted
from experiments.reproduction_report import CLAIM_COLUMNS, CLAIMS_FILE
from experiments.spec import REPO

BEGIN, END = "<!-- reproductions:begin -->", "<!-- reproductions:end -->"
DOCS = REPO / "docs" / "reproductions"
README = REPO / "README.md"
TITLE = "# Reproductions: the claims of each committed report"


def _esc(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def collect(root: Path = DOCS) -> tuple[pd.DataFrame, list[str]]:
    """(every claims.csv under `root` and its subfolders, one frame with a `report` column; the
    folders with a REPORT.md but no claims.csv)."""
    frames, missing = [], []
    for d in sorted(p for p in root.iterdir() if p.is_dir()):
        folders = [d, *sorted(p for p in d.iterdir() if p.is_dir())]
        found = [f / CLAIMS_FILE for f in folders if (f / CLAIMS_FILE).is_file()]
        missing += [str(f.relative_to(root)) for f in folders
                    if (f / "REPORT.md").is_file() and not (f / CLAIMS_FILE).is_file()]
        for f in found:
            df = pd.read_csv(f, keep_default_na=False, na_values=[""])
            absent = [c for c in CLAIM_COLUMNS if c not in df.columns]
            if absent:
                from cosim.errors import InputError

                raise InputError.at(f, field=absent[0], expected="the columns of claims.csv", got=list(df.columns))
            frames.append(df.assign(report=str(f.parent.relative_to(root))))
    cols = ["report", *CLAIM_COLUMNS]
    return (pd.concat(frames, ignore_index=True)[cols] if frames else pd.DataFrame(columns=cols)), missing


@dataclass(frozen=True)
class Tables:
    docs: str  # docs/reproductions/README.md
    block: str  # what goes between BEGIN and END in README.md


def _claim_text(r) -> str:
    paper = "direction only" if pd.isna(r.paper_factor) else \
        f"{(r.qualifier + ' ') if isinstance(r.qualifier, str) and r.qualifier else ''}{r.paper_factor:g}×"
    where = r.row if str(r.row).startswith(LARGEST) else f"row {r.row}"
    return f"{r.figure}: {r.better} better than {r.worse} ({paper}), {where}"


def _how_far(r) -> str:
    if r.direction == "n/a":
        return ""
    txt = f"cosim {r.cosim_factor:.3g}×"
    if not pd.isna(r.margin_ratio):
        txt += f", margin ratio {r.margin_ratio:.2f}"
    return txt


def _seeds(r) -> str:
    if r.direction == "n/a":
        return ""
    if int(r.seeds) < 2:
        return f"{int(r.seeds)}"
    return f"{int(r.seeds)} ({int(r.seeds_held)} hold; {r.seed_factor_min:.3g}-{r.seed_factor_max:.3g}×)"


def _counts(df: pd.DataFrame) -> pd.DataFrame:
    rows = []
    df = df[counted(df)]  # an "up to" claim once, by its largest-row line
    for report, g in df.groupby("report", sort=True):
        ratio = g["margin_ratio"].dropna()
        rows.append({"report": report, "experiment": g["experiment"].iloc[0], "size": g["size"].iloc[0],
                     "claims": len(g), **{v: int((g["verdict"] == v).sum()) for v in (*VERDICTS, NOT_CHECKED)},
                     "median_ratio": float(ratio.median()) if len(ratio) else math.nan,
                     "seeds": int(g["seeds"].max()) if len(g) else 0})
    return pd.DataFrame(rows)


def _paper(name: str) -> str:
    from experiments.spec import load_experiment

    try:
        return load_experiment(name).paper
    except Exception:  # an experiment since removed from the catalog: its name stands alone
        return name


def _count_table(df: pd.DataFrame, link: str) -> list[str]:
    lines = ["| paper | report (size) | claims | reproduces | direction only | does not reproduce | not checked "
             "| median margin ratio | seeds |", "|---|---|---|---|---|---|---|---|---|"]
    for r in _counts(df).to_dict("records"):
        ratio = "n/a" if math.isnan(r["median_ratio"]) else f"{r['median_ratio']:.2f}"
        levels = " | ".join(str(r[v]) for v in (*VERDICTS, NOT_CHECKED))
        lines.append(f"| {_esc(_paper(r['experiment']))} | [{r['report']}]({link}{r['report']}/REPORT.md) "
                     f"({r['size']}) | {r['claims']} | {levels} | {ratio} | {r['seeds']} |")
    return lines


def render(root: Path = DOCS) -> Tables:
    """The two tables from the committed claims files under `root`."""
    df, missing = collect(root)
    legend = ("Verdicts (`experiments.compare`): `reproduces` = the direction holds on the mean and on every seed "
              "and cosim's margin (factor − 1) meets the paper's qualifier with the claim's factor m (default 2): "
              "\"about X\" within half to twice X's margin, \"at least X\" at least half of it, \"at most X\" at "
              "most twice it (a tie is within the bound), \"up to X\" each row in direction and the margin once, "
              "on cosim's largest row (`largest over rows (R)`: the claim's one counted line, `direction only` when a "
              "row misses the direction; its row lines are listed, not counted); `direction only` = the mean's direction holds but "
              "not the margin or every seed; `does not reproduce` = the mean ties or reverses; `not checked` = the "
              "size cannot check it (no cells for a side, or the catalog's reason, shown). Margin ratio = cosim's "
              "margin / the paper's.")
    docs = [TITLE, "", "Generated by `cosim reproduce --summary` from the claims.csv beside each REPORT.md; do not "
            "edit by hand.", "", legend, ""]
    docs += _count_table(df, "")
    if missing:
        docs += ["", "Reports without claims.csv (written before the claims table; their numbers are in the "
                 "REPORT.md only): " + ", ".join(f"[{m}]({m}/REPORT.md)" for m in missing) + "."]
    for report, g in df.groupby("report", sort=True):
        docs += ["", f"## {report} ({g['size'].iloc[0]})", "", "| claim | verdict | how far | seeds |",
                 "|---|---|---|---|"]
        for r in g.itertuples(index=False):
            verdict = r.verdict + (f" ({r.why})" if isinstance(r.why, str) and r.why else "")
            docs.append(f"| {_esc(_claim_text(r))} | {_esc(verdict)} | {_esc(_how_far(r))} | {_esc(_seeds(r))} |")
    block = ["Generated by `cosim reproduce --summary` from the committed reports' claims.csv "
             "(per claim: docs/reproductions/README.md).", ""] + _count_table(df, "docs/reproductions/")
    if missing:
        block += ["", "Without claims.csv (REPORT.md only): " + ", ".join(missing) + "."]
    return Tables("\n".join(docs) + "\n", "\n".join(block))


def fill_block(text: str, block: str) -> str | None:
    """`text` with the lines between BEGIN and END replaced by `block`; None when it has no such block."""
    if BEGIN not in text or END not in text or text.index(BEGIN) > text.index(END):
        return None
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{block}\n{END}{tail}"


def write(root: Path = DOCS, readme: Path = README) -> list[str]:
    """Write docs/reproductions/README.md and README.md's block; one message per file."""
    from cosim.atomic import write_text

    tables = render(root)
    write_text(tables.docs, root / "README.md")
    out = [f"wrote {root / 'README.md'}"]
    text = readme.read_text() if readme.is_file() else ""
    filled = fill_block(text, tables.block)
    if filled is None:
        out.append(f"{readme}: no {BEGIN} … {END} block; left as it is")
    elif filled != text:
        write_text(filled, readme)
        out.append(f"filled the reproductions block of {readme}")
    else:
        out.append(f"{readme}: reproductions block already up to date")
    return out
