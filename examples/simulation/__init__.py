"""The end-to-end simulation behind ``examples/simulate.py`` and ``examples/bench_guard.py``.

Modules, from pure to I/O:

- ``workload``: the jobs to run (arrival times, bursts, durations) from a seed. Pure.
- ``trace``: what happened, as plain records (jobs, runners, timeline samples). Pure.
- ``report``: the final report computed from a trace; text and JSON. Pure.
- ``plot``: an SVG timeline of a trace, written directly. Pure.
- ``live``: the progress line on the terminal.
- ``agent``: the runner agent that plays the cluster and the runner binary.
- ``faults``: the fault schedule of ``--faults``.
- ``orchestrate``: starts the servers and the real programs, runs a workload, returns a trace.
- ``baseline``: the controller ordering before ARC PR #4642, for the benchmark only.
"""
