"""What both programs share beyond Kubernetes and GitHub: the error root and the exit
codes (``errors``), logging with secret redaction (``logs``), and the metrics and probe
server (``serving``). One home per concern, so ``ghalistener`` and ``ersctl`` log, fail
and exit alike. Imports neither program.
"""
