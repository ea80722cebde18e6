"""CPU accounting shared by the benchmarks that run a server and its clients as
separate processes: CPU seconds per process, per thread and for the whole
machine (psutil, from the ``tools`` extra), summed per kind of phase."""

from __future__ import annotations

import time
from dataclasses import dataclass

import psutil


def cpu_seconds(pid: int, tid: int | None = None) -> float:
    """CPU seconds (user + system) of a process, or of one of its threads."""
    proc = psutil.Process(pid)
    if tid is None:
        t = proc.cpu_times()
        return float(t.user + t.system)
    for thread in proc.threads():
        if thread.id == tid:
            return float(thread.user_time + thread.system_time)
    raise ValueError(f"process {pid} has no thread {tid}")


def machine_busy_seconds() -> float:
    """CPU time used on the whole machine (all cores, every process) since boot."""
    t = psutil.cpu_times()
    # guest time is already counted in user time: leave it out, as idle and iowait
    busy = ("user", "nice", "system", "irq", "softirq", "steal")
    return float(sum(getattr(t, name, 0.0) for name in busy))


@dataclass
class Usage:
    """Wall-clock and CPU seconds accumulated over the phases of one kind."""

    wall: float = 0.0
    server: float = 0.0
    server_loop: float = 0.0  # the server's main thread, which runs its event loop
    clients: float = 0.0
    machine: float = 0.0

    def percent(self) -> dict[str, float]:
        """Per cent of one core, by consumer."""
        w = self.wall or 1.0
        other = max(0.0, self.machine - self.server - self.clients)
        return {
            "server": 100 * self.server / w,
            "server_event_loop_thread": 100 * self.server_loop / w,
            "clients": 100 * self.clients / w,
            "other_processes": 100 * other / w,
        }


class Meter:
    """Measures one phase: CPU of the server (and its main thread), of the
    clients and of the machine, from ``start()`` to ``stop(usage)``."""

    def __init__(self, server_pid: int, client_pids: list[int]) -> None:
        self.server_pid = server_pid
        self.client_pids = client_pids
        self._marks: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)

    def _read(self) -> tuple[float, float, float, float]:
        pid = self.server_pid
        clients = sum(cpu_seconds(p) for p in self.client_pids)
        return cpu_seconds(pid), cpu_seconds(pid, pid), clients, machine_busy_seconds()

    def start(self) -> None:
        self._marks = self._read()

    def stop(self, usage: Usage, wall: float) -> None:
        now = self._read()
        server, loop, clients, machine = (b - a for a, b in zip(self._marks, now, strict=True))
        usage.wall += wall
        usage.server += server
        usage.server_loop += loop
        usage.clients += clients
        usage.machine += machine


def _cpu_or_zero(pid: int) -> float:
    try:
        return cpu_seconds(pid)
    except psutil.Error:
        return 0.0  # gone (a process killed on purpose, say)


class GroupMeter:
    """CPU seconds of named groups of processes, of the rest of the machine
    ("other") and the wall-clock time ("wall") from ``start()`` to ``stop()``."""

    def __init__(self, groups: dict[str, list[int]]) -> None:
        self.groups = groups
        self._marks: dict[str, float] = {}
        self._t0 = 0.0

    def _read(self) -> dict[str, float]:
        out = {name: sum(_cpu_or_zero(p) for p in pids) for name, pids in self.groups.items()}
        out["machine"] = machine_busy_seconds()
        return out

    def start(self) -> None:
        self._marks = self._read()
        self._t0 = time.monotonic()

    def stop(self) -> dict[str, float]:
        now = self._read()
        used = {k: now[k] - self._marks[k] for k in now}
        machine = used.pop("machine")
        used["other"] = max(0.0, machine - sum(used.values()))
        used["wall"] = time.monotonic() - self._t0
        return used


def percent(used: dict[str, float], key: str) -> float:
    """Per cent of one core, from ``GroupMeter.stop()``'s seconds."""
    return 100.0 * used.get(key, 0.0) / (used.get("wall") or 1.0)


def percents(used: dict[str, float]) -> dict[str, float]:
    """Every group's (and "other"'s) per cent of one core."""
    return {k: percent(used, k) for k in used if k != "wall"}


def warn_if_disturbed(others: list[float]) -> None:
    """Say so when other processes (per cent of one core) used the machine."""
    if others and max(others) > 10:
        print(
            f"WARNING: other processes used up to {max(others):.0f} % of a core during the "
            "measurement; on a shared machine, run again when it is quiet"
        )


def print_caveats(percents: list[dict[str, float]], errors: list[str]) -> None:
    """Warn when other processes disturbed the measurement, and list client errors."""
    warn_if_disturbed([u["other_processes"] for u in percents])
    if errors:
        print(f"ERRORS ({len(errors)}):")
        for e in errors[:10]:
            print(f"  {e}")
