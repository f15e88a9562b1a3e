#!/bin/bash
# A private Slurm cluster on this machine, to try autotune's Slurm side on a laptop or in CI (and
# for the tests): one node (this machine, all its cores), its own munge key, ports, state and logs
# in one folder; nothing system-wide is touched and nothing of it outlives `stop`.
#
#   launchers/private-slurm.sh start [DIR]    # prints the line to eval: export SLURM_CONF=DIR/slurm.conf
#   launchers/private-slurm.sh stop  [DIR]    # cancels its jobs, stops its daemons, removes DIR
#   launchers/private-slurm.sh status [DIR]
#
# Needs root and Debian's slurm-wlm and munge (apt-get install slurm-wlm munge); DIR defaults to
# ${TMPDIR:-/tmp}/autotune-slurm. Then, for example:
#   eval "$(launchers/private-slurm.sh start)"
#   sbatch --time=2 launchers/autotune.sbatch --ppn 2
#
# Several nodes, each in a network namespace of its own (made beforehand, e.g. by the tests'
# multi-host bed): PRIVATE_SLURM_NODES="n1=ADDR1@NETNS1 n2=ADDR2@NETNS2" and
# PRIVATE_SLURM_CONTROLLER=ADDR (this machine's address that the namespaces reach). Each slurmd
# runs in its namespace under its own host name, with the machine's cores shared out among them
# and its own PMIx folder (one machine's /tmp is shared by every "node").
set -euo pipefail

cmd=${1:-}
dir=${2:-${TMPDIR:-/tmp}/autotune-slurm}

die() { echo "private-slurm: $*" >&2; exit 1; }

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

pid_of() {  # the pid in FILE if that process is alive
    local file=$1 pid
    [ -s "$file" ] || return 1
    pid=$(cat "$file")
    kill -0 "$pid" 2>/dev/null && echo "$pid"
}

stop_pid() {  # TERM, then KILL after 10 s
    local pid=$1 i
    kill -TERM "$pid" 2>/dev/null || return 0
    for i in $(seq 1 100); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
}

start() {
    [ "$(id -u)" = 0 ] || die "run as root (slurmd and munged start as root here)"
    for tool in munged slurmctld slurmd sinfo; do
        command -v "$tool" >/dev/null || [ -x "/usr/sbin/$tool" ] \
            || die "$tool not found: apt-get install slurm-wlm munge"
    done
    if [ -e "$dir/slurm.conf" ] && pid_of "$dir/slurmctld.pid" >/dev/null; then
        echo "export SLURM_CONF=$dir/slurm.conf"
        return 0
    fi
    mkdir -p "$dir/state" "$dir/spool" "$dir/log"
    # munged wants every folder above its socket searchable by all, and a socket path is short:
    # the socket lives in a folder of its own under /tmp, named in DIR for `stop`
    local sockdir
    sockdir=$(mktemp -d /tmp/autotune-munge.XXXXXX)
    chmod 755 "$sockdir"
    echo "$sockdir" > "$dir/munge.dir"
    dd if=/dev/urandom of="$dir/munge.key" bs=1024 count=1 status=none
    chmod 400 "$dir/munge.key"
    /usr/sbin/munged --key-file="$dir/munge.key" --socket="$sockdir/munge.socket" \
        --pid-file="$dir/munged.pid" --log-file="$dir/log/munged.log" \
        --seed-file="$dir/munged.seed" || die "munged did not start: see $dir/log/munged.log"
    local node cpus ctl_port node_port controller nodes spec count
    node=$(hostname -s)
    nodes=${PRIVATE_SLURM_NODES:-}
    controller=127.0.0.1
    if [ -n "$nodes" ]; then
        controller=${PRIVATE_SLURM_CONTROLLER:-}
        [ -n "$controller" ] || die "PRIVATE_SLURM_CONTROLLER: the address the nodes reach this machine at"
    fi
    count=$(wc -w <<< "$nodes")
    cpus=$(( $(nproc) / (count > 0 ? count : 1) ))
    [ "$cpus" -ge 1 ] || cpus=1
    ctl_port=$(free_port)
    node_port=$(free_port)
    cat > "$dir/slurm.conf" <<EOF
# a private Slurm cluster made by autotune's launchers/private-slurm.sh
ClusterName=autotune
SlurmctldHost=$node($controller)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$sockdir/munge.socket,cred_expire=10
CredType=cred/munge
SlurmctldPort=$ctl_port
SlurmdPort=$node_port
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=5
JobRequeue=1
KillWait=10
MinJobAge=600
EOF
    if [ -z "$nodes" ]; then
        echo "NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN" >> "$dir/slurm.conf"
    else
        for spec in $nodes; do  # name=addr@netns
            [[ "$spec" =~ ^([A-Za-z0-9-]+)=([0-9.]+)@([A-Za-z0-9_.-]+)$ ]] \
                || die "PRIVATE_SLURM_NODES: $spec is not name=address@netns"
            echo "NodeName=${BASH_REMATCH[1]} NodeAddr=${BASH_REMATCH[2]} CPUs=$cpus State=UNKNOWN" \
                >> "$dir/slurm.conf"
        done
    fi
    echo "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP" >> "$dir/slurm.conf"
    export SLURM_CONF=$dir/slurm.conf
    /usr/sbin/slurmctld -f "$SLURM_CONF" || die "slurmctld did not start: see $dir/log/slurmctld.log"
    if [ -z "$nodes" ]; then
        /usr/sbin/slurmd -f "$SLURM_CONF" || die "slurmd did not start: see $dir/log/slurmd-$node.log"
        count=1
    else
        local name netns
        for spec in $nodes; do
            name=${spec%%=*}
            netns=${spec##*@}
            # the same slurm.conf beside a PMIx folder of its own (mpi.conf is read from there)
            mkdir -p "$dir/nodes/$name/pmix"
            cp "$SLURM_CONF" "$dir/nodes/$name/slurm.conf"
            echo "PMIxCliTmpDirBase=$dir/nodes/$name/pmix" > "$dir/nodes/$name/mpi.conf"
            # only the network namespace: ip netns exec would remount /sys, hiding the cgroups
            nsenter --net="/var/run/netns/$netns" unshare --uts \
                sh -c 'hostname "$1"; exec /usr/sbin/slurmd -f "$2" -N "$1"' sh "$name" \
                "$dir/nodes/$name/slurm.conf" \
                || die "slurmd $name did not start: see $dir/log/slurmd-$name.log"
        done
    fi
    local i
    for i in $(seq 1 100); do
        if [ "$(sinfo -h -N -o %T 2>/dev/null | grep -cx idle)" -ge "$count" ]; then
            echo "export SLURM_CONF=$SLURM_CONF"
            return 0
        fi
        sleep 0.2
    done
    die "the nodes did not come up in 20 s: see $dir/log/"
}

stop() {
    [ -d "$dir" ] || return 0
    if [ -e "$dir/slurm.conf" ] && pid_of "$dir/slurmctld.pid" >/dev/null; then
        SLURM_CONF=$dir/slurm.conf scancel --full --quiet --user=root 2>/dev/null || true
        local i
        for i in $(seq 1 150); do  # the jobs' steps end before their daemons do
            [ -z "$(SLURM_CONF=$dir/slurm.conf squeue -h -t R,CG 2>/dev/null)" ] && break
            sleep 0.2
        done
    fi
    local file pid
    for file in "$dir"/slurmd-*.pid "$dir/slurmctld.pid" "$dir/munged.pid"; do
        pid=$(pid_of "$file") && stop_pid "$pid"
    done
    # a job step or a job's process still running under this cluster (its slurmstepd, or a
    # process of one of its jobs: SLURM_JOB_ID and this SLURM_CONF in its environment) goes too:
    # nothing of the cluster may outlive it
    local env_file vars
    for env_file in /proc/[0-9]*/environ; do
        pid=${env_file#/proc/}
        pid=${pid%/environ}
        [ "$pid" = $$ ] && continue
        vars=$( { tr '\0' '\n' < "$env_file"; } 2>/dev/null) || continue
        grep -qx "SLURM_CONF=$dir/slurm.conf" <<< "$vars" || continue
        if grep -q "^SLURM_JOB_ID=" <<< "$vars" || [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = slurmstepd ]; then
            kill -KILL "$pid" 2>/dev/null || true
        fi
    done
    if [ -s "$dir/munge.dir" ]; then
        rm -rf "$(cat "$dir/munge.dir")"
    fi
    rm -rf "$dir"
}

status() {
    [ -e "$dir/slurm.conf" ] || { echo "no private Slurm cluster at $dir"; return 1; }
    SLURM_CONF=$dir/slurm.conf sinfo
    SLURM_CONF=$dir/slurm.conf squeue
}

case $cmd in
    start) start ;;
    stop) stop ;;
    status) status ;;
    *) die "usage: $0 start|stop|status [DIR]" ;;
esac
