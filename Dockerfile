# syntax=docker/dockerfile:1
# One image for both programs: `ghalistener run` and `ersctl reconcile`, and ARC's names
# for them (`/ghalistener`, `/manager`), so that ARC's Helm charts run it unchanged.
#
# Two stages: the builder installs the package into a virtual environment, every
# dependency at the version .ci/constraints.txt pins (the lock CI tests with; refreshed by
# .ci/lock), so a build on another day ships what CI tested. The final stage copies only
# that environment onto a fresh slim base and removes the base's own packaging tools: no
# compiler, pip, setuptools, cache or source tree ships, and it runs as an unprivileged user.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS builder
# The lock pins the build backend (hatchling) too. pip before 26.2 applies
# PIP_CONSTRAINT to the backend's isolated environment; 26.2 and later apply only
# PIP_BUILD_CONSTRAINT there. Both are set, so that either pip in the base pins it.
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_CONSTRAINT=/src/.ci/constraints.txt \
    PIP_BUILD_CONSTRAINT=/src/.ci/constraints.txt
RUN python -m venv /opt/venv
WORKDIR /src
# The metadata and the two packages: all `pip install .` needs (.dockerignore keeps the
# rest of the tree, test support included, out of the context).
COPY pyproject.toml README.md ./
COPY .ci/constraints.txt ./.ci/
COPY ghalistener ./ghalistener
COPY ersctl ./ersctl
# pip compiles the bytecode here: the final root filesystem is read-only at run time.
RUN /opt/venv/bin/pip install .
# kubernetes ships an asyncio client (kubernetes/aio, half of its 126 MB) and requires the
# aiohttp stack for it alone; neither program imports any of it (tests/deploy/test_image.py
# imports every module of both with these blocked), so it does not ship. Then pip itself.
RUN /opt/venv/bin/pip uninstall --yes aiohttp aiohttp-retry aiohappyeyeballs aiosignal attrs \
        frozenlist multidict propcache yarl \
    && rm -r /opt/venv/lib/python3*/site-packages/kubernetes/aio \
    && /opt/venv/bin/pip uninstall --yes pip setuptools wheel
# .dockerignore keeps the test support (*/testing/) out of the context; should a build get
# around it (another context or ignore file), fail here rather than ship it.
RUN leaked="$(find /opt/venv/lib/python3*/site-packages/ghalistener \
        /opt/venv/lib/python3*/site-packages/ersctl -name testing)" \
    && if [ -n "$leaked" ]; then echo "test support would ship: $leaked" >&2; exit 1; fi

FROM ${PYTHON_IMAGE}
# 65532 is the conventional "nonroot" uid of distroless images; Kubernetes'
# runAsNonRoot check needs a numeric USER to verify it without reading /etc/passwd.
RUN groupadd --system --gid 65532 nonroot \
    && useradd --system --uid 65532 --gid 65532 --no-create-home --shell /usr/sbin/nologin nonroot
COPY --from=builder /opt/venv /opt/venv
# The base's packaging tools go (pip and setuptools in its site-packages, the wheels
# ensurepip and Debian's python3-venv keep to make them again); the build fails should
# any remain, in the base or in the environment: nothing in the image can install code
# at run time.
RUN python -m pip uninstall --yes pip setuptools wheel >/dev/null 2>&1; \
    rm -rf /usr/local/lib/python3*/ensurepip /usr/lib/python3*/ensurepip /usr/share/python-wheels; \
    left="$(find / -xdev \( -name pip -o -name 'pip-*' -o -name setuptools -o -name 'setuptools-*' \
        -o -name ensurepip \) -not -path '/proc/*' -print)"; \
    if [ -n "$left" ]; then echo "packaging tools would ship: $left" >&2; exit 1; fi
# ARC's AutoscalingListener Pod runs `/ghalistener` with no arguments and its config file
# in LISTENER_CONFIG_PATH; so invoked, `ghalistener` runs `ghalistener run`.
RUN ln -s /opt/venv/bin/ghalistener /ghalistener
# ARC's controller Deployment runs `/manager` with ARC's Go-style flags and environment
# (CONTROLLER_MANAGER_POD_NAMESPACE, CONTROLLER_MANAGER_CONTAINER_IMAGE); so invoked,
# `ersctl-manager` reads them into `ersctl reconcile`'s options and runs it.
RUN ln -s /opt/venv/bin/ersctl-manager /manager
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
USER 65532:65532
# No ENTRYPOINT: each Deployment names its program (`ersctl reconcile`, `ghalistener run`,
# ARC's controller `/manager` or ARC's listener Pod `/ghalistener`).
CMD ["ersctl", "--help"]
