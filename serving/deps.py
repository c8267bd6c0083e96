"""Request-scoped access to the service state."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastapi import Request

if TYPE_CHECKING:
    from serving.app import ServiceState


def service(request: Request) -> ServiceState:
    """The state loaded in the app's lifespan."""
    return request.app.state.service
