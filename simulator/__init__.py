"""The trace-driven simulator (Kontothanassis & Goddeau 2004) of the embedded scheduler (``scheduler/``), its workloads and estimate sources.

- ``simulate``, ``metrics``, ``gantt``: the discrete-event simulator, schedule metrics, charts;
- ``workload``, ``workloads/``: what a simulation replays (a cluster, jobs with true run times, outages);
- ``grid``: Santos-Neto et al. 2004's shared home link and input staging; ``retries``: kills at a limit and the retry rules;
- ``estimates``, ``learning``, ``online``, ``last_two``: the estimate sources a simulation sees run times through;
- ``scenarios``: the specs of a workload, a cluster and an estimate source (a policy's spec is ``scheduler.specs``);
- ``runner``, ``compare``, ``bounds``: one run, a grid of policies x estimates x seeds, makespan lower bounds;
- ``plan_choice``: choosing a backfilling plan on a log's past windows; ``memory_limits``: memory limits on a log.

It sits above ``training`` (``learning`` retrains the model zoo as a simulation runs); nothing in production imports it.
"""
