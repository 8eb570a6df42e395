"""ARC's four kinds as the runtime watches them (``ersctl.kube.resources.Kind``).

Each controller declares the kinds it watches from these (``add_*_controller`` in its
package); the manager starts informers for what it is given and names no kind itself.
"""

from __future__ import annotations

from typing import Final

from ersctl.api import (
    AL_KIND,
    AL_PLURAL,
    ARS_KIND,
    ARS_PLURAL,
    ER_KIND,
    ER_PLURAL,
    ERS_KIND,
    ERS_PLURAL,
    GROUP,
    VERSION,
)
from ersctl.kube.resources import Kind, Resource


def arc(plural: str) -> Resource:
    """One of ARC's custom resources (``actions.github.com/v1alpha1``) by plural."""
    return Resource(group=GROUP, version=VERSION, plural=plural)


SETS: Final = Kind(name=ERS_KIND, resource=arc(ERS_PLURAL))
RUNNERS: Final = Kind(name=ER_KIND, resource=arc(ER_PLURAL), share_specs=True)
"""Runners of one set share their spec (the set's template): the informer stores it once."""
AUTOSCALING_SETS: Final = Kind(name=ARS_KIND, resource=arc(ARS_PLURAL))
LISTENERS: Final = Kind(name=AL_KIND, resource=arc(AL_PLURAL))
