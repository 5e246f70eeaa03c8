#!/bin/bash
# slurm-local.sh: a one-node Slurm (Debian's slurm-wlm + munge) on this
# machine, then the checks of issue 38 (docs/CLUSTERS.md). Run as root:
#   bash scripts/slurm-local.sh setup    # install, configure, start daemons
#   bash scripts/slurm-local.sh check    # the srun / sbatch / sweep checks
#   bash scripts/slurm-local.sh stop     # stop the daemons it started
# With no argument: setup, then check.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
CPUS=${CPUS:-$(nproc)}

setup() {
  if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y slurm-wlm munge
  fi
  mkdir -p /etc/munge /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/munge /etc/slurm
  if [[ ! -s /etc/munge/munge.key ]]; then
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
  fi
  chown -R munge:munge /etc/munge /run/munge 2>/dev/null || true
  chmod 400 /etc/munge/munge.key
  pgrep -x munged >/dev/null || su -s /bin/sh munge -c /usr/sbin/munged || /usr/sbin/munged --force
  mem=$(awk '/MemTotal/ {print int($2/1024) - 2048}' /proc/meminfo)
  cat > /etc/slurm/slurm.conf <<CONF
ClusterName=memo-local
SlurmctldHost=localhost
AuthType=auth/munge
CryptoType=crypto/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MpiDefault=none
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$mem State=UNKNOWN
PartitionName=local Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
  pgrep -x slurmctld >/dev/null || slurmctld
  pgrep -x slurmd >/dev/null || slurmd -N localhost
  for _ in $(seq 30); do
    sinfo -h -o %t 2>/dev/null | grep -qE '^(idle|mix|alloc)' && break
    sleep 1
  done
  scontrol update nodename=localhost state=resume 2>/dev/null || true
  sinfo
}

stop() {
  for d in slurmd slurmctld; do
    p=$(pgrep -x "$d" || true)
    [[ -n "$p" ]] && kill "$p"
  done
  true
}

# check runs the "Done when" of issue 38 and compares report tables.
check() {
  MEMO=${MEMO:-$ROOT/bin/memo}
  [[ -x "$MEMO" ]] || go build -o "$ROOT/bin/memo" ./cmd/memo
  W=${WORK:-$(mktemp -d /tmp/memo-slurm.XXXXXX)}
  echo "work directory: $W"
  fail=0
  same() { # same LABEL A B: the two report tables are byte-identical
    if cmp -s "$2" "$3"; then echo "SAME   $1"; else echo "DIFFER $1"; diff "$2" "$3" || true; fail=1; fi
  }
  tps() { grep -o 'tok/s=[0-9]*' "$1" | tail -1; }
  "$MEMO" run --runs "$W/nproc" --nproc 2 exp/smoke.toml > "$W/nproc.log" 2>&1
  echo "memo run --nproc 2: $(tps "$W/nproc.log")"
  srun -N1 -n2 "$MEMO" run --runs "$W/srun" exp/smoke.toml > "$W/srun.log" 2>&1
  echo "srun -N1 -n2 memo run: $(tps "$W/srun.log") (threads per rank: $(grep -o '"threads": [0-9]*' "$W/srun/smoke/manifest.json"))"
  same "srun -n2 vs --nproc 2" "$W/srun/smoke/report/table.md" "$W/nproc/smoke/report/table.md"
  srun -N1 -n2 "$MEMO" run --runs "$W/srun2t" --threads 2 exp/smoke.toml > "$W/srun2t.log" 2>&1
  echo "srun -N1 -n2 memo run --threads 2 (every core per rank, as before): $(tps "$W/srun2t.log")"
  sbatch -W -n2 -o "$W/sbatch-srun.log" --wrap "cd '$ROOT' && srun '$MEMO' run --runs '$W/sbatch-srun' exp/smoke.toml" > /dev/null
  same "sbatch -n2 { srun memo run } vs --nproc 2" "$W/sbatch-srun/smoke/report/table.md" "$W/nproc/smoke/report/table.md"
  sbatch -W -n2 -o "$W/sbatch-nproc.log" --wrap "cd '$ROOT' && '$MEMO' run --runs '$W/sbatch-nproc' --nproc 2 exp/smoke.toml" > /dev/null
  same "sbatch -n2 { memo run --nproc 2 } vs --nproc 2" "$W/sbatch-nproc/smoke/report/table.md" "$W/nproc/smoke/report/table.md"
  # Bad input: one memo: line, exit 2, before any work.
  for bad in "srun -n2 $MEMO run --runs $W/bad --nproc 3 exp/smoke.toml" "$MEMO run --runs $W/bad --master-port 70000 exp/smoke.toml" \
             "$MEMO sweep --slurm --dry-run --sbatch --colour=red --runs $W/bad $W/sweep.toml"; do
    cp exp/smoke.toml "$W/sweep.toml"; printf '\n[sweep]\n"goldfish.k" = [0, 4]\n' >> "$W/sweep.toml"
    set +e; out=$($bad 2>&1); rc=$?; set -e
    echo "refused (exit $rc, $(grep -c '^memo: ' <<<"$out") memo: line): $bad"
    [[ $rc == 2 ]] || fail=1
  done
  # A 2-point sweep: sbatch job array + report job against memo sweep -j 1.
  "$MEMO" sweep -j 1 --runs "$W/local" "$W/sweep.toml" > "$W/sweep-local.log" 2>&1
  "$MEMO" sweep --slurm --submit --runs "$W/slurm" "$W/sweep.toml" > "$W/sweep-slurm.log" 2>&1
  while squeue -h | grep -q .; do sleep 2; done
  same "sweep --slurm (sbatch) vs sweep -j 1" "$W/slurm/smoke/report/table.md" "$W/local/smoke/report/table.md"
  grep -h "memo:" "$W"/slurm/smoke/logs/report_*.out || true
  return $fail
}

case "${1:-all}" in
  setup) setup ;;
  stop) stop ;;
  check) check ;;
  all) setup; check ;;
  *) echo "usage: $0 [setup|check|stop]" >&2; exit 2 ;;
esac
