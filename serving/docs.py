"""The interactive API docs (Swagger UI) from files installed with the package, so an air-gapped site sees them too.

FastAPI's default ``/docs`` page loads Swagger UI from a CDN; here the page is FastAPI's own, pointed at the
copy of Swagger UI that the ``swagger-ui-py`` package installs (with its Apache-2.0 license), served under
``/docs-assets``. ReDoc, CDN-only, is not offered.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from swagger_ui.utils import SWAGGER_UI_PY_ROOT

ASSETS = "/docs-assets"


def install(app: FastAPI, docs_url: str = "/docs") -> None:
    """Serve Swagger UI's files under ``/docs-assets`` and the docs page at ``docs_url`` (create the app with ``docs_url=None``)."""
    app.mount(ASSETS, StaticFiles(directory=SWAGGER_UI_PY_ROOT / "static"), name="docs-assets")

    @app.get(docs_url, include_in_schema=False)
    async def docs(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_swagger_ui_html(
            openapi_url=f"{root}{app.openapi_url}",
            title=f"{app.title} - Swagger UI",
            swagger_js_url=f"{root}{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{root}{ASSETS}/favicon-32x32.png",
        )
