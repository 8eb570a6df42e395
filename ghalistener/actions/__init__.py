"""Client of GitHub's runner scale-set service (the Python counterpart of actions/scaleset),
shared by both programs.

Entry points, imported from their modules: ``client.ActionsClient`` (endpoints),
``session.MessageSession`` (the message queue of one session), ``auth`` and
``credentials`` (PAT or GitHub App credentials, and the one parser for them), ``proxy``
(explicit proxy settings and Go's rules for which requests use them), and the
exception tree in ``errors``. This package module imports nothing, so the pure parts
(``types``, ``errors``, ``credentials``) load without httpx.
"""
