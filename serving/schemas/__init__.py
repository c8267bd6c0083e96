"""The API's payloads, one module per resource (predict, observations, models, planning, catalog, health, scheduler,
slurm), on the bounded values of :mod:`serving.schemas.common`; pydantic here, the domain's typed records inside."""
