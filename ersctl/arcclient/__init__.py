"""ARC's kinds on the runtime: their declarations (``kinds``) and typed views over the
generic Kubernetes client and caches of ``ersctl.kube``: the API reader (``reader``), the
writer (``writer``) and the cached reader with its copy-on-write runners (``cache``).
The four controllers share them; ``ersctl.kube`` itself names no ARC kind.
"""
