"""Speed and scale measurements (not timed tests): `bench_<area>.py` modules, run by `benchmarks.run`."""
