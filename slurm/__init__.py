"""Slurm, the site adapter: which algorithm a job runs (site rules, the job's own words), its accounting read back as measurements.

- :mod:`slurm.words`: the ``key=value`` words a job names its algorithm with, and the tag the plugin
  writes into its comment;
- :mod:`slurm.rules`: the site's rule file mapping a job to an algorithm, a platform and parameters;
- :mod:`slurm.accounting`: ``sacct -P`` output and the ``jobcomp/filetxt`` log, parsed;
- :mod:`slurm.ingest`: finished jobs as measurements (timed-out and out-of-memory runs censored), with the
  estimate served;
- :mod:`slurm.submit_history`: a job's history features at its submission, from its user's rows of the
  store's ``job_history`` (the SWF replay's code);
- :mod:`slurm.resource_guard`: the resource guard, requeuing a stopped job with more of only what ran out;
- :mod:`slurm.follow`: tailing the completion log into the store, resuming after a restart.
- :mod:`slurm.bridge`: the embedded scheduler's orders carried out on Slurm, its node and job changes sent back.
"""
