"""What the service knows: algorithms, platforms and the champion models."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from serving.deps import service
from serving.schemas import AlgorithmOut, ModelOut, ParameterOut, PlatformOut

router = APIRouter(tags=["catalog"])


@router.get("/algorithms", response_model=list[AlgorithmOut], summary="Algorithms and their parameter schemas")
def algorithms(state=Depends(service)) -> list[AlgorithmOut]:
    return [
        AlgorithmOut(
            name=a.name,
            description=a.description,
            parameters=[ParameterOut(name=n, **p.model_dump(exclude={"description", "feature"})) for n, p in a.parameters.items()],
            platforms=a.platforms,
        )
        for a in state.catalog.algorithms.values()
    ]


@router.get("/platforms", response_model=list[PlatformOut], summary="Platforms of the cluster")
def platforms(state=Depends(service)) -> list[PlatformOut]:
    return [PlatformOut(**p.model_dump(include=set(PlatformOut.model_fields))) for p in state.catalog.platforms.values()]


@router.get("/models", response_model=list[ModelOut], summary="The champion serving each algorithm and platform")
def models(state=Depends(service)) -> list[ModelOut]:
    return [
        ModelOut(
            algorithm=c.algorithm,
            platform=c.platform,
            name=c.name,
            version=c.version,
            flavor=c.flavor,
            features=c.feature_names,
            metrics=c.metrics,
        )
        for c in state.oracle.champions.values()
    ]
