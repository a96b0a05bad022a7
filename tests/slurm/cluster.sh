# tests/slurm/cluster.sh — sourced by tests/cli/slurm.sh: a throwaway
# single-node Slurm cluster on 127.0.0.1, no systemd, no cgroups.
#
#   slurm_install        installs slurm-wlm and munge (Debian) when missing;
#                        returns 1 (reason in $SL_WHY) if that is impossible
#                        or not root
#   sl_apt_install PKG.. apt-get install with an update-and-retry
#   slurm_start DIR      writes DIR/slurm.conf, starts munged (its own key and
#                        socket in DIR), slurmctld and slurmd in the
#                        foreground as background jobs, ports chosen free on
#                        127.0.0.1 and bound there only; waits (bounded) for
#                        the node to be idle. Returns 1 on failure (logs in DIR)
#   sl CMD...            runs a Slurm client command against this cluster
#   slurm_stop           cancels this cluster's jobs, waits for them, stops the
#                        daemons (TERM, then KILL after 10 s) and reaps them
#   slurm_leftovers      prints the pids of processes still running with this
#                        cluster's SLURM_CONF in their environment (daemons,
#                        job steps, jobs): none once slurm_stop has run
#
# Only the processes this cluster started are ever signalled: the daemons by
# the pids of their background jobs, and at the end any process whose
# environment holds SLURM_CONF=<this cluster's config> (only this cluster's
# daemons, job steps and jobs have it; the test passes it to client commands
# one command at a time and never exports it).
SL_DIR="" SL_CONF="" SL_MUNGED="" SL_CTLD="" SL_SLURMD="" SL_WHY=""

sl() { SLURM_CONF="$SL_CONF" "$@"; }

# sl_apt_install PKG...: scripts/apt-install.sh (as root): an apt-get update
# and a second try when the first fails (stale package lists). Sets SL_WHY.
sl_apt_install() {
    [ "$(id -u)" = 0 ] || { SL_WHY="$* missing and not root"; return 1; }
    command -v apt-get >/dev/null 2>&1 || { SL_WHY="$* missing and no apt-get"; return 1; }
    log=${TMPDIR:-/tmp}/pairshard-slurm-apt.$$.log
    echo "# installing $* (apt-get)"
    sh "$PS_ROOT/scripts/apt-install.sh" "$log" "$@"
    rc=$?
    [ $rc -eq 0 ] || SL_WHY="apt-get install $* failed: $(tail -n 1 "$log")"
    rm -f "$log"
    return $rc
}

# The daemons need root (slurmd starts job steps as the job's user).
slurm_install() {
    [ "$(id -u)" = 0 ] || { SL_WHY="not root (slurmd needs root)"; return 1; }
    need=""
    for c in slurmctld slurmd sbatch squeue scontrol scancel sinfo; do
        command -v "$c" >/dev/null 2>&1 || need="slurm-wlm"
    done
    command -v munged >/dev/null 2>&1 || need="$need munge"
    if [ -n "$need" ]; then
        # shellcheck disable=SC2086
        sl_apt_install $need || return 1
    fi
    command -v slurmctld >/dev/null 2>&1 && command -v slurmd >/dev/null 2>&1 &&
        command -v munged >/dev/null 2>&1 || { SL_WHY="installed, but daemons not found"; return 1; }
}

# Two free TCP ports on 127.0.0.1.
sl_free_ports() {
    python3 -c '
import socket
ss = [socket.socket() for _ in range(2)]
for s in ss:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))'
}

# sl_wait SECONDS CMD...: runs CMD every 0.2 s until it succeeds.
sl_wait() {
    sl_end=$(( $(date +%s) + $1 )); shift
    while ! "$@"; do
        [ "$(date +%s)" -lt "$sl_end" ] || return 1
        sleep 0.2
    done
}

sl_node_idle() { [ "$(sl sinfo -h -n localhost -o %t 2>/dev/null)" = idle ]; }

slurm_start() {
    SL_DIR=$1
    SL_CONF="$SL_DIR/slurm.conf"
    mkdir -p "$SL_DIR/state" "$SL_DIR/spool" || return 1
    chmod 711 "$SL_DIR"
    # shellcheck disable=SC2046
    set -- $(sl_free_ports) || return 1
    ctld_port=$1 slurmd_port=$2
    me=$(id -un)
    cat >"$SL_CONF" <<EOF
ClusterName=pstest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
CommunicationParameters=NoInAddrAny,NoCtldInAddrAny
SlurmUser=$me
SlurmdUser=$me
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SL_DIR/munge.sock
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MailProg=/bin/true
ReturnToService=2
MinJobAge=600
StateSaveLocation=$SL_DIR/state
SlurmdSpoolDir=$SL_DIR/spool
SlurmctldPidFile=$SL_DIR/slurmctld.pid
SlurmdPidFile=$SL_DIR/slurmd.pid
SlurmctldLogFile=$SL_DIR/slurmctld.log
SlurmdLogFile=$SL_DIR/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
NodeName=localhost NodeAddr=127.0.0.1 NodeHostname=localhost CPUs=$(nproc) State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
    dd if=/dev/urandom of="$SL_DIR/munge.key" bs=1024 count=1 2>/dev/null || return 1
    # Each daemon is a simple command in the background (not through the
    # sl function, which would put a subshell between), so $! is its pid.
    chmod 600 "$SL_DIR/munge.key"
    SLURM_CONF="$SL_CONF" munged -F --force --socket="$SL_DIR/munge.sock" --key-file="$SL_DIR/munge.key" \
        --pid-file="$SL_DIR/munged.pid" --seed-file="$SL_DIR/munged.seed" \
        --log-file="$SL_DIR/munged.log" --origin=127.0.0.1 >"$SL_DIR/munged.out" 2>&1 &
    SL_MUNGED=$!
    sl_wait 10 test -S "$SL_DIR/munge.sock" || { echo "# munged did not start"; return 1; }
    SLURM_CONF="$SL_CONF" slurmctld -D -i >"$SL_DIR/slurmctld.out" 2>&1 &
    SL_CTLD=$!
    SLURM_CONF="$SL_CONF" slurmd -D -N localhost >"$SL_DIR/slurmd.out" 2>&1 &
    SL_SLURMD=$!
    if ! sl_wait 40 sl_node_idle; then
        echo "# the node did not come up; last log lines:"
        tail -n 5 "$SL_DIR/slurmctld.log" "$SL_DIR/slurmd.log" 2>&1 | sed 's/^/#   /'
        return 1
    fi
    SL_PORTS="$ctld_port $slurmd_port"
}

# Succeeds when every listening socket on this cluster's ports is bound to
# 127.0.0.1 (and there is at least one).
slurm_loopback_only() {
    # shellcheck disable=SC2086
    python3 - $SL_PORTS <<'PY'
import sys
ports = {int(p) for p in sys.argv[1:]}
seen = bad = 0
for f in ("/proc/net/tcp", "/proc/net/tcp6"):
    try:
        lines = open(f).read().splitlines()[1:]
    except OSError:
        continue
    for l in lines:
        local, state = l.split()[1], l.split()[3]
        addr, port = local.split(":")
        if state != "0A" or int(port, 16) not in ports:
            continue
        seen += 1
        if addr != "0100007F":
            bad += 1
            print("# port %d listens on %s" % (int(port, 16), addr))
sys.exit(0 if seen and not bad else 1)
PY
}

slurm_leftovers() {
    [ -n "$SL_CONF" ] || return 0
    for p in /proc/[0-9]*; do
        pid=${p#/proc/}
        [ "$pid" = "$$" ] && continue
        { tr '\0' '\n' <"$p/environ"; } 2>/dev/null | grep -qxF "SLURM_CONF=$SL_CONF" && echo "$pid"
    done
    return 0
}

sl_alive() { # pid...: succeeds while any is alive (a zombie is not)
    for p in "$@"; do
        [ -n "$p" ] && kill -0 "$p" 2>/dev/null &&
            [ "$(sed -n 's/^[0-9]* (.*) \([A-Z]\).*/\1/p' "/proc/$p/stat" 2>/dev/null)" != Z ] &&
            return 0
    done
    return 1
}
sl_not() { ! "$@"; }

slurm_stop() {
    [ -n "$SL_DIR" ] || return 0
    if [ -n "$SL_CTLD" ] && kill -0 "$SL_CTLD" 2>/dev/null; then
        sl scancel --quiet --user="$(id -un)" 2>/dev/null
        sl_wait 20 sl_no_jobs || true
    fi
    for p in $SL_SLURMD $SL_CTLD $SL_MUNGED; do
        kill -TERM "$p" 2>/dev/null
    done
    # shellcheck disable=SC2086
    sl_wait 10 sl_not sl_alive $SL_SLURMD $SL_CTLD $SL_MUNGED ||
        for p in $SL_SLURMD $SL_CTLD $SL_MUNGED; do kill -KILL "$p" 2>/dev/null; done
    for p in $SL_SLURMD $SL_CTLD $SL_MUNGED; do
        wait "$p" 2>/dev/null
    done
    # Job steps outliving slurmd (only after a failure): this cluster's own.
    left=$(slurm_leftovers)
    if [ -n "$left" ]; then
        # shellcheck disable=SC2086
        kill -TERM $left 2>/dev/null
        sleep 1
        left=$(slurm_leftovers)
        # shellcheck disable=SC2086
        [ -z "$left" ] || kill -KILL $left 2>/dev/null
    fi
    SL_SLURMD="" SL_CTLD="" SL_MUNGED=""
    return 0
}

sl_no_jobs() { [ -z "$(sl squeue -h -o %i 2>/dev/null)" ]; }
