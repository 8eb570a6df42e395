"""The end-to-end simulation behind ``examples/simulate.py``, ``examples/soak.py`` and
``examples/bench_guard.py``.

Modules, from pure to I/O:

- ``workload``: the jobs to run (arrival times, bursts, durations) from a seed. Pure.
- ``trace``: what happened, as plain records (jobs, runners, timeline samples). Pure.
- ``report``: the final report computed from a trace; text and JSON. Pure.
- ``plot``: an SVG timeline of a trace, written directly. Pure.
- ``faults``: the fault schedules of ``--faults`` and of the soak. Pure.
- ``invariants``: the soak's invariants checked on a trace, as a table. Pure.
- ``live``: the progress line on the terminal.
- ``agent``: the runner agent that plays the cluster and the runner binary.
- ``pods``: the runner agent when ersctl's runner controller runs: kubelet and runner
  binary per runner Pod, with the soak's start faults, and its zombie timing.
- ``disruptions``: runner Pods evicted, drained or lost with their node (the soak's).
- ``cluster``: the objects a run starts from and the agent's in-process view of them.
- ``github_side``: the GitHub simulator, its HTTP server and the agent's service port.
- ``processes``: the programs under test as subprocesses (start, stop, restart, kill).
- ``replicas``: the controller's replicas, leader-elected in the soak.
- ``orchestrate``: runs one simulation end to end and returns its trace.
- ``options``: ``simulate.py``'s command line, every value checked before anything starts.
- ``command``: what ``simulate.py`` does with good options: run, report, write outputs.
- ``soak``: what ``soak.py`` does with good options: configure, run, check, report.
- ``baseline``: the controller ordering before ARC PR #4642, for the benchmark only.
"""
