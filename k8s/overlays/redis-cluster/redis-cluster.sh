# The Redis Cluster's own steps (k8s/overlays/redis-cluster), run by sh in
# the redis image: `sh redis-cluster.sh STEP ARGS...`. redis-cli
# authenticates with REDISCLI_AUTH (the Secret spades-redis).
#
#   addresses FILE   (the init container) Points each node of nodes.conf at
#                    the address its hostname has now. A pod's IP changes
#                    when it is rescheduled, and nodes find each other by the
#                    IPs in nodes.conf: after a restart of every pod at once
#                    no node could reach another. Each node's line keeps the
#                    hostname it announced (`ip:port@bus,hostname,...`), which
#                    the headless Service resolves.
#   ready            (the readiness probe) This node is in a cluster that is
#                    up, and a replica has its primary's data: until then the
#                    StatefulSet's rolling update and the disruption budget
#                    wait before they stop the next pod.
#   prestop          (preStop) A primary hands its slots to a replica of its
#                    own before it stops (CLUSTER FAILOVER, which loses no
#                    acknowledged write), so that a rolling update or a
#                    drain does not wait for the node timeout and a failover.
#   create --cluster-replicas N HOST:PORT...
#                    (the Job) Once every node answers, creates the cluster
#                    if every node is empty. If any node is in a cluster
#                    already it changes nothing, and fails only if
#                    redis-cli --cluster check finds that cluster broken.
set -eu

log() { printf '%s\n' "$*" >&2; }

# The address of a hostname, of the family of this pod's own IP (POD_IP).
resolve() {
    case "${POD_IP:-}" in
        *:*) getent ahostsv6 "$1" | awk '{ print $1; exit }' ;;
        *) getent ahostsv4 "$1" | awk '{ print $1; exit }' ;;
    esac
}

addresses() {
    conf=$1
    [ -s "$conf" ] || return 0 # a new node: nothing to point anywhere yet
    tmp="$conf.addresses"
    : >"$tmp"
    while read -r id addr rest || [ -n "$id" ]; do
        case "$addr" in
            *@*) ;;
            *)
                # The `vars` line (and any other): as it is.
                printf '%s\n' "$id${addr:+ $addr}${rest:+ $rest}" >>"$tmp"
                continue
                ;;
        esac
        endpoint=${addr%%,*}              # ip:port@bus
        extra=${addr#"$endpoint"}         # ,hostname,aux=... or nothing
        host=${extra#,}
        host=${host%%,*}
        case "$host" in *=*) host="" ;; esac # an aux field: no hostname
        ip=${endpoint%:*}
        ports=${endpoint##*:}
        flags=${rest%% *}
        new=""
        case ",$flags," in
            *,myself,*) new=${POD_IP:-} ;;
            *) [ -z "$host" ] || new=$(resolve "$host" || true) ;;
        esac
        if [ -n "$new" ] && [ "$new" != "$ip" ]; then
            log "nodes.conf: $id ${host:-myself} $ip -> $new"
            ip=$new
        fi
        printf '%s %s %s\n' "$id" "$ip:$ports$extra" "$rest" >>"$tmp"
    done <"$conf"
    mv "$tmp" "$conf"
}

ready() {
    redis-cli cluster info | grep -q '^cluster_state:ok' || return 1
    replication=$(redis-cli info replication)
    case "$replication" in *role:master*) return 0 ;; esac
    printf '%s\n' "$replication" | grep -q '^master_link_status:up'
}

prestop() {
    [ "$(redis-cli role | head -n 1)" = master ] || return 0
    me=$(redis-cli cluster myid)
    # A replica that is linked and not failing: `id ip:port@bus,... flags
    # primary ping pong epoch link-state`.
    replica=$(redis-cli cluster replicas "$me" |
        awk '$3 !~ /fail/ && $8 == "connected" { print $2; exit }')
    if [ -z "$replica" ]; then
        log "no replica to hand the slots to: they wait for this node"
        return 0
    fi
    endpoint=${replica%%@*}
    redis-cli -h "${endpoint%:*}" -p "${endpoint##*:}" cluster failover || return 0
    waited=0
    while [ "$waited" -lt 20 ]; do
        [ "$(redis-cli role | head -n 1)" = master ] || return 0
        sleep 1
        waited=$((waited + 1))
    done
    log "the failover to $endpoint did not happen in 20 s"
}

create() {
    [ "${1:-}" = --cluster-replicas ] || {
        log "usage: create --cluster-replicas N HOST:PORT..."
        return 2
    }
    replicas=$2
    shift 2
    nodes=""
    for node in "$@"; do
        host=${node%:*}
        port=${node##*:}
        until ip=$(resolve "$host") && [ -n "$ip" ] &&
            answer=$(redis-cli -h "$ip" -p "$port" ping 2>&1) && [ "$answer" = PONG ]; do
            log "waiting for $node (${answer:-no address yet})"
            answer=""
            sleep 2
        done
        info=$(redis-cli -h "$ip" -p "$port" cluster info | tr -d '\r')
        known=$(printf '%s\n' "$info" | sed -n 's/^cluster_known_nodes://p')
        assigned=$(printf '%s\n' "$info" | sed -n 's/^cluster_slots_assigned://p')
        if [ "$known" != 1 ] || [ "$assigned" != 0 ]; then
            log "$node is in a cluster already ($known nodes known, $assigned slots): not creating one"
            # A create that stopped part way left a cluster that this check
            # refuses: the Job fails rather than pass over it (repair it with
            # redis-cli --cluster fix).
            redis-cli --cluster check "$ip:$port" && return 0
            log "the cluster is not whole: see redis-cli --cluster check above"
            return 1
        fi
        nodes="$nodes $ip:$port"
    done
    # shellcheck disable=SC2086 # one word per node
    redis-cli --cluster create $nodes --cluster-replicas "$replicas" --cluster-yes
}

step=${1:-}
[ "$#" -eq 0 ] || shift
case "$step" in
    addresses | ready | prestop | create) "$step" "$@" ;;
    *)
        log "usage: sh redis-cluster.sh addresses FILE | ready | prestop | create ..."
        exit 2
        ;;
esac
