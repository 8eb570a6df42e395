"""The JWTs of the authentication chain: the GitHub App's own, signed with its key, and
the admin token's expiry. The one module of the scale-set client that loads the JWT
library (with its cryptography backend, tens of milliseconds of start-up, which reading
a configuration need not pay); the chain runs them in ``ghalistener.actions.connection``.
"""

from __future__ import annotations

import jwt

from ghalistener.actions.auth import AppCredentials
from ghalistener.actions.errors import CredentialsError

# GitHub rejects an App JWT that lives longer than 10 minutes; backdating iat by 60 s
# absorbs clock skew between us and GitHub.
APP_JWT_BACKDATE_SECONDS = 60
APP_JWT_LIFETIME_SECONDS = 9 * 60


def app_jwt(credentials: AppCredentials, *, now: float) -> str:
    """Return the RS256 JWT that authenticates the App itself.

    ``iat = now - 60``, ``exp = iat + 9 min`` (GitHub's limit is 10), ``iss = app id``.
    Raises CredentialsError (without the key) when the key cannot sign.
    """
    issued_at = int(now) - APP_JWT_BACKDATE_SECONDS
    claims = {
        "iat": issued_at,
        "exp": issued_at + APP_JWT_LIFETIME_SECONDS,
        "iss": str(credentials.app_id),
    }
    try:
        return jwt.encode(claims, credentials.private_key, algorithm="RS256")
    except (ValueError, TypeError, jwt.PyJWTError) as exc:
        # The library's message may quote key material: do not chain its text.
        raise CredentialsError(
            f"the GitHub App private key cannot sign a JWT ({type(exc).__name__})"
        ) from None


def jwt_expiry(token: str) -> float:
    """Return the ``exp`` claim of a JWT (signature not verified: we are not its audience).

    Raises CredentialsError when the token is not a JWT or has no numeric ``exp``.
    """
    try:
        claims = jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError:
        raise CredentialsError("the admin token is not a JWT") from None
    exp = claims.get("exp")
    if not isinstance(exp, int | float) or isinstance(exp, bool):
        raise CredentialsError("the admin token has no numeric 'exp' claim")
    return float(exp)
