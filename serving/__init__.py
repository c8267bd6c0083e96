"""The HTTP API: a FastAPI app factory (:mod:`serving.app`), routers per resource, payload schemas, and a client of
the API (:mod:`serving.client`). Importing the package loads none of them, so the client stays light."""
