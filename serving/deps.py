"""Request-scoped access to the service state."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from serving.state import ServiceState

__all__ = ["ServiceState", "State", "service"]


async def service(request: Request) -> ServiceState:
    """The state loaded in the app's lifespan (``async``: a plain lookup needs no worker thread)."""
    return request.app.state.service


State = Annotated[ServiceState, Depends(service)]
