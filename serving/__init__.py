"""The HTTP API: a FastAPI app factory, routers per resource, payload schemas."""

from serving.app import create_app

__all__ = ["create_app"]
