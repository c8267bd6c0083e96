"""Bearer-token security for write and admin endpoints, in one place."""

from __future__ import annotations

import secrets
from typing import Annotated

from fastapi import HTTPException, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from serving.deps import State

bearer = HTTPBearer(auto_error=False, description="PREDICTOR_API_TOKEN, as `Authorization: Bearer <token>`.")


async def require_token(
    credentials: Annotated[HTTPAuthorizationCredentials | None, Security(bearer)], state: State
) -> None:
    """Let the request through only with the configured token; with none configured, writes are disabled (403)."""
    expected = state.api.token
    if expected is None:
        raise HTTPException(403, "write and admin endpoints are disabled: the service has no PREDICTOR_API_TOKEN")
    challenge = {"www-authenticate": "Bearer"}
    if credentials is None:
        raise HTTPException(401, "missing bearer token (Authorization: Bearer <token>)", headers=challenge)
    if not secrets.compare_digest(credentials.credentials.encode(), expected.get_secret_value().encode()):
        raise HTTPException(401, "invalid bearer token", headers=challenge)
