"""Test support shipped with ersctl (not in the image), for tests, the end-to-end
simulation, and trying the controller without a cluster: an embedded Kubernetes API
server (:mod:`ersctl.testing.apiserver`), objects of any kind by plural through the
official client (:mod:`ersctl.testing.objects`), and runner Pods as a kubelet running
the runner image would report them (:mod:`ersctl.testing.podsim`), and ports to name
before a program listens on them (:mod:`ersctl.testing.ports`)."""
