"""Liveness and readiness."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from serving.deps import service

router = APIRouter(tags=["operations"])


@router.get("/healthz", summary="The process is up")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz", summary="Catalog, store and champions are loaded")
def readyz(state=Depends(service)) -> dict[str, object]:
    return {"status": "ready", "champions": len(state.oracle.champions)}
