"""A private single-node SLURM for the cluster tests: munged, slurmctld and slurmd of Debian's packages.

Everything lives in one folder of its own (munge key, socket and seed, slurm.conf, state and spool folders, logs)
and listens on ports picked free, so two test sessions on one machine never share a daemon, a port or a file. The
daemons run in the foreground as children of the test process and are told by the kernel to stop if it dies
(PR_SET_PDEATHSIG), so even a killed test session leaves nothing running. SLURM needs root to start jobs as the
submitting user; accounting is off (no slurmdbd), as on a small cluster without a database. The main scheduler
runs every 2 s instead of every 60 s (sched_interval), so a requeued job starts as soon as its begin time passes.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from judgebias.devserver.server import RunningServer
from tests.helpers import free_port, stop_process
from tests.integration.helpers import QUICK

PROGRAMS = ("munged", "slurmctld", "slurmd", "sbatch", "srun", "scontrol", "scancel", "sinfo", "squeue")
PARTITION = "debug"
_PR_SET_PDEATHSIG = 1


def missing_program() -> str | None:
    """The first program a private SLURM needs that is not installed (None when all are there)."""
    return next((name for name in PROGRAMS if shutil.which(name) is None), None)


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the process that started it dies (Linux)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def detected_node() -> dict[str, str]:
    """This machine as slurmd sees it (`slurmd -C`): CPUs, sockets, cores, threads and RealMemory."""
    line = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, check=True).stdout.splitlines()[0]
    fields = dict(word.split("=", 1) for word in line.split())
    keep = ("CPUs", "Boards", "SocketsPerBoard", "CoresPerSocket", "ThreadsPerCore", "RealMemory")
    return {key: fields[key] for key in keep if key in fields}


def slurm_conf(root: Path, hostname: str, node: dict[str, str], ports: tuple[int, int]) -> str:
    """The cluster's slurm.conf: one node (this machine), one partition, no accounting, everything under root."""
    node_spec = " ".join(f"{key}={value}" for key, value in node.items())
    return f"""\
ClusterName=jb{secrets.token_hex(4)}
SlurmctldHost={hostname}(127.0.0.1)
SlurmctldPort={ports[0]}
SlurmdPort={ports[1]}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={root / "munge" / "socket"},cred_expire=10
StateSaveLocation={root / "state"}
SlurmdSpoolDir={root / "spool"}
SlurmctldPidFile={root / "slurmctld.pid"}
SlurmdPidFile={root / "slurmd.pid"}
SlurmctldLogFile={root / "log" / "slurmctld.log"}
SlurmdLogFile={root / "log" / "slurmd.log"}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/builtin
SchedulerParameters=sched_interval=2
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MailProg=/bin/true
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=10
MinJobAge=300
NodeName={hostname} NodeAddr=127.0.0.1 {node_spec} State=UNKNOWN
PartitionName={PARTITION} Nodes={hostname} Default=YES MaxTime=INFINITE State=UP
"""


@dataclass
class SlurmCluster:
    """A running private SLURM: its folder, its slurm.conf and the daemons serving it."""

    root: Path
    conf: Path
    hostname: str
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        """What a process needs in its environment to use this cluster (sbatch, srun, scancel, submitit)."""
        return {"SLURM_CONF": str(self.conf)}

    def command(self, *args: str, check: bool = True, timeout: float = 60) -> str:
        """Run a SLURM client command (sinfo, squeue, scancel, scontrol ...) against this cluster; its stdout."""
        completed = subprocess.run(
            list(args), env=os.environ | self.env, capture_output=True, text=True, timeout=timeout, check=False
        )
        if check and completed.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed ({completed.returncode}): {completed.stderr.strip()}")
        return completed.stdout

    def jobs(self) -> list[str]:
        """`JOBID STATE` of every job slurmctld still knows (array tasks one per line)."""
        return self.command("squeue", "-h", "-r", "-o", "%i %T").split("\n")[:-1]

    def cancel_all(self) -> None:
        """Cancel every job of the cluster and wait until slurmctld lists none running or pending."""
        self.command("scancel", f"--partition={PARTITION}")
        self.wait_for(
            lambda: not [job for job in self.jobs() if job.split()[1] in ("RUNNING", "PENDING")], "no job left"
        )

    def log(self, name: str) -> str:
        """The end of a daemon's log file and output (slurmctld, slurmd or munged), for a failure message."""
        paths = [self.root / "log" / f"{name}.{kind}" for kind in ("log", "out")]
        return "".join(path.read_text(encoding="utf-8", errors="replace")[-3000:] for path in paths if path.exists())

    def wait_for(self, condition: Callable[[], bool], what: str, timeout: float = 60) -> None:
        """Poll `condition` until it holds; a RuntimeError naming `what` and the daemons' logs if it never does."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
                if condition():
                    return
            dead = [p.args for p in self.processes if p.poll() is not None]
            if dead:
                break
            time.sleep(0.2)
        logs = "\n".join(f"--- {name}\n{self.log(name)}" for name in ("munged", "slurmctld", "slurmd"))
        raise RuntimeError(f"private SLURM: {what} did not happen within {timeout:.0f} s\n{logs}")

    def stop(self) -> None:
        """Cancel every job, then stop the daemons (slurmd, slurmctld, munged) and wait for them to exit."""
        if self.processes and all(p.poll() is None for p in self.processes):
            with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
                self.command("scancel", "--full", f"--partition={PARTITION}", timeout=10)
        for process in reversed(self.processes):
            stop_process(process, timeout=15)
        self.processes.clear()


def _spawn(argv: Sequence[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """Start one daemon in the foreground, its output appended to `log`, stopped if this process dies."""
    with log.open("ab") as out:
        return subprocess.Popen(
            list(argv), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env,
            preexec_fn=_die_with_parent, start_new_session=True,
        )  # fmt: skip


def start_slurm(root: Path) -> SlurmCluster:
    """Write a private cluster's files under `root`, start munged, slurmctld and slurmd; return once it is idle."""
    for name in ("munge", "state", "spool", "log"):
        (root / name).mkdir(parents=True, exist_ok=True)
    root.chmod(0o755)
    (root / "munge").chmod(0o755)
    key = root / "munge" / "munge.key"
    key.write_bytes(secrets.token_bytes(1024))
    key.chmod(0o400)
    hostname = socket.gethostname().split(".")[0]
    conf = root / "slurm.conf"
    conf.write_text(
        slurm_conf(root, hostname, detected_node(), (free_port(host=""), free_port(host=""))), encoding="utf-8"
    )
    cluster = SlurmCluster(root, conf, hostname)
    env = os.environ | cluster.env
    try:
        munge = root / "munge"
        cluster.processes.append(
            _spawn(
                ["munged", "--foreground", "--force", f"--socket={munge / 'socket'}", f"--key-file={key}",
                 f"--pid-file={munge / 'munged.pid'}", f"--seed-file={munge / 'seed'}",
                 f"--log-file={root / 'log' / 'munged.log'}"],
                root / "log" / "munged.out", env,
            )
        )  # fmt: skip
        cluster.wait_for((munge / "socket").exists, "munged's socket")
        cluster.processes.append(
            _spawn(["slurmctld", "-D", "-i", "-f", str(conf)], root / "log" / "slurmctld.out", env)
        )
        cluster.wait_for(lambda: "UP" in cluster.command("scontrol", "ping", timeout=10), "slurmctld answering ping")
        cluster.processes.append(
            _spawn(["slurmd", "-D", "-N", hostname, "-f", str(conf)], root / "log" / "slurmd.out", env)
        )
        cluster.wait_for(
            lambda: cluster.command("sinfo", "-h", "-N", "-o", "%T", timeout=10).strip() == "idle",
            f"node {hostname} idle",
        )
    except BaseException:
        cluster.stop()
        raise
    return cluster


LAUNCH = ("hydra/launcher=slurm", "hydra.launcher.cpus_per_task=1", "hydra.launcher.mem_gb=1")


def local(judge: RunningServer, *more: str, key_env: str = "null") -> tuple[str, ...]:
    """Overrides for the `local` judge pointed at a test server (its key, if any, in the variable `key_env`)."""
    return ("judge=local", f"judge.base_url={judge.url}", f"judge.api_key_env={key_env}", *QUICK, *more)


def files_holding(folder: Path, secret: str) -> list[Path]:
    """Every file under `folder` whose bytes contain `secret` (pickles and logs included)."""
    return [path for path in folder.rglob("*") if path.is_file() and secret.encode() in path.read_bytes()]


def measured(name: str, started: float, judge: RunningServer) -> None:
    """Print a scenario's wall time and the requests its judge saw."""
    print(f"\n{name}: {time.monotonic() - started:.1f} s wall, {judge.stats()['requests']} requests")
