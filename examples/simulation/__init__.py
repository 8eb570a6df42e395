"""The end-to-end simulation behind ``examples/simulate.py``, ``examples/soak.py``,
``examples/local_cluster.py`` and the ``examples/bench_*.py`` benchmarks.

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
- ``remote``: the same API on an existing cluster (``--kubeconfig``), and ``apiproxy``
  recording its requests and injecting its faults there.
- ``listeners``: the kubelet of listener Pods, running each Pod's real ``ghalistener``.
- ``kubelet`` and ``workloads``: the local cluster's kubelet for the controller
  Deployment's Pods, and the Deployment and ReplicaSet controllers it needs.
- ``github_side``: the GitHub simulator, its HTTP server and the agent's service port.
- ``processes``: the programs under test as subprocesses (start, stop, restart, kill).
- ``replicas``: the controller's replicas, leader-elected in the soak.
- ``orchestrate``: runs one simulation end to end and returns its trace.
- ``options``: ``simulate.py``'s command line, every value checked before anything starts.
- ``command``: what ``simulate.py`` does with good options: run, report, write outputs.
- ``soak``: what ``soak.py`` does with good options: configure, run, check, report.
- ``baseline``: the controller as ARC runs it, before and after PR #4642, and
  ``serial`` (runners created one at a time): for the benchmarks only.
- ``procstat`` and ``sampler``: what a benchmark reads of a process, and a profiler run.
"""
