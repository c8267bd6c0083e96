"""What the service knows: algorithms with their parameter schemas, and platforms."""

from __future__ import annotations

from fastapi import APIRouter

from serving.deps import State
from serving.schemas.catalog import AlgorithmOut, ParameterOut, PlatformOut

router = APIRouter(prefix="/v1", tags=["catalog"])


@router.get("/algorithms", response_model=list[AlgorithmOut], summary="Algorithms and their parameter schemas")
async def algorithms(state: State) -> list[AlgorithmOut]:
    """Every algorithm with its parameters (type, default, range, choices, extractor) and the platforms it runs on."""
    return [
        AlgorithmOut(
            name=a.name,
            description=a.description,
            parameters=[
                ParameterOut(name=n, **p.model_dump(exclude={"description", "feature"}))
                for n, p in a.parameters.items()
            ],
            platforms=a.platforms,
        )
        for a in state.catalog.algorithms.values()
    ]


@router.get("/platforms", response_model=list[PlatformOut], summary="Platforms of the cluster")
async def platforms(state: State) -> list[PlatformOut]:
    """Every platform with its kind, cores, clock, memory, disk and power draw."""
    return [
        PlatformOut(**p.model_dump(include=set(PlatformOut.model_fields))) for p in state.catalog.platforms.values()
    ]
