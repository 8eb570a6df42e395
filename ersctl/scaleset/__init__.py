"""GitHub's runner scale-set service as the controllers use it.

``ports`` is the one port both controllers call it through (pure: protocols and the
errors of its contract); ``clients`` implements it with the credentials Secret each
object names (one client cache per process, fenced by the leader lease), read through
``documents`` and reached through the object's proxy and CA (``network``);
``scalesets`` finds, registers, updates and deletes one AutoscalingRunnerSet's scale set;
``command`` is ``ersctl scaleset``, which finds or creates a scale set and prints its id.
"""
