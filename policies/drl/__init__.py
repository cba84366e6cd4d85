"""A DRL scheduler in the style of DL2 (ONES' DRL baseline): a small numpy policy network that adds
one GPU to one job per action, many actions per round, and never preempts (`policies.drl.policy`);
trained by `python -m cli.drl_train` (`cli.drl_train`)."""

from policies.drl import policy  # noqa: F401  registers `drl`
