"""What both programs share beyond Kubernetes and GitHub: the error root and the exit
codes (``errors``) and how a command line ends on them (``cli``); logging (``logs``)
with secret redaction (``redaction``); the metrics and probe server (``serving``) and
what its probes answer (``probes``); stopping at once (``interrupt``) and a blocking
call a stop need not wait for (``background``); a token bucket (``ratelimit``); and
Go's flag syntax for ARC's command lines (``goflags``). One home per concern, so
``ghalistener`` and ``ersctl`` log, fail and exit alike. Imports neither program.
"""
