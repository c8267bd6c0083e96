"""The bundled policies; importing this package registers them."""

from scheduler.policies.edf import EDFDeferral
from scheduler.policies.fcfs import FCFS

__all__ = ["FCFS", "EDFDeferral"]
