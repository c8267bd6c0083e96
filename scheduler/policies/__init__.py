"""The bundled policies; importing this package registers them."""

from scheduler.policies.affinity import Affinity
from scheduler.policies.data_aware import (
    StorageAffinity,
    WorkqueueReplication,
    XSufferage,
)
from scheduler.policies.edf import EDFDeferral
from scheduler.policies.fcfs import FCFS
from scheduler.policies.genetic import GeneticCoScheduling, GreedyCoScheduling
from scheduler.policies.greedy import Greedy
from scheduler.policies.mapping import MCT, MaxMin, MinMin, Sufferage
from scheduler.policies.walker import MaxPerformance, MaxPerformanceLatency, Rand

__all__ = ["FCFS", "MCT", "Affinity", "EDFDeferral", "GeneticCoScheduling", "Greedy", "GreedyCoScheduling", "MaxMin", "MaxPerformance", "MaxPerformanceLatency", "MinMin", "Rand", "StorageAffinity", "Sufferage", "WorkqueueReplication", "XSufferage"]
