"""FastAPI app factory: settings in, app out; catalog, store and champions loaded once in the lifespan."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from features import FeatureError
from predictor.catalog import Catalog, load_catalog
from predictor.oracle import RuntimeOracle, build_oracle
from predictor.settings import Settings
from predictor.store import MeasurementStore
from serving.paths import PathNotAllowed
from serving.routers import catalog as catalog_routes
from serving.routers import health, predict


@dataclass
class ServiceState:
    """What the routes share: settings, catalog, store and the oracle."""

    settings: Settings
    catalog: Catalog
    store: MeasurementStore
    oracle: RuntimeOracle


def build_state(settings: Settings) -> ServiceState:
    """Load the catalog, open the store and load every champion."""
    catalog = load_catalog(settings.catalog_path)
    store = MeasurementStore(settings.resolved_store_url)
    store.migrate()
    oracle = build_oracle(catalog, settings.resolved_tracking_uri, store.profile_table())
    return ServiceState(settings, catalog, store, oracle)


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the API; nothing is loaded until the app starts."""
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.service = build_state(settings)
        yield
        app.state.service.store.dispose()

    app = FastAPI(
        title="Runtime predictor",
        version="0.1.0",
        description="Estimated run time of a job on each platform of a heterogeneous cluster.",
        lifespan=lifespan,
    )
    app.include_router(health.router)
    app.include_router(catalog_routes.router, prefix="/v1")
    app.include_router(predict.router, prefix="/v1")

    @app.exception_handler(RequestValidationError)
    async def _invalid_request(_: Request, exc: RequestValidationError) -> JSONResponse:
        # The offending input is left out: it may hold NaN or infinities, which JSON cannot carry.
        errors = [{"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]} for e in exc.errors()]
        summary = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in errors)
        return JSONResponse(status_code=422, content={"detail": summary, "errors": errors})

    @app.exception_handler(FeatureError)
    async def _feature_error(_: Request, exc: FeatureError) -> JSONResponse:
        return JSONResponse(status_code=422, content={"detail": str(exc)})

    @app.exception_handler(PathNotAllowed)
    async def _path_error(_: Request, exc: PathNotAllowed) -> JSONResponse:
        return JSONResponse(status_code=403, content={"detail": str(exc)})

    return app
