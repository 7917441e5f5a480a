#!/bin/sh
# amplify_agent.sh -- one agent of the amplification experiment
# (demo/amplify.sh): a node of a delegation tree with fan-out 2.
#
#   amplify_agent.sh turn          one turn, run by `onced --exec` (docs/protocol.md)
#   amplify_agent.sh send URL TEXT the naive root client: one blind-retrying send
#
# A task's text is "amp ROOT pPATH": PATH is the node's place under root
# ROOT ("" for the root agent, then one digit 0/1 per level). A node whose
# PATH has AMP_DEPTH digits is a leaf: it performs one side effect on the
# counting service (AMP_NEXT). Any other node delegates to its two
# children at AMP_NEXT (the next level's onced, through a lossy proxy),
# waits until both completed, and completes.
#
# Two ways of doing the same thing (AMP_MODE):
#   once   children get client-minted IDs, once_child_id(task, step) (so a
#          parent turn that runs again names the same children), sent with
#          the once CLI (outbox, retries with the same ID and body); the
#          leaf's call carries Idempotency-Key <task>:step-<n>, the
#          effect-key convention of docs/protocol.md section 8.
#   naive  what a plain A2A 1.0 stack does: a blocking SendMessage without a
#          task ID, and each retry a new send with a new messageId; the
#          leaf's call carries no key. The retry policy is the same.
#
# The environment comes from onced's (set by demo/amplify.py): AMP_MODE,
# AMP_NEXT, AMP_DEPTH, AMP_ONCE (the once CLI), AMP_IDS (demo/amplify_ids),
# AMP_OUTBOX (this level's outbox), AMP_ATTEMPTS, AMP_TIMEOUT_S,
# AMP_BACKOFF_BASE_MS, AMP_BACKOFF_CAP_MS.
# Invariant: a turn completes only when every child (or the side effect)
# was acknowledged; otherwise it fails and says why.

# Sleep U[0, min(cap, base * 2^(n-1))] ms before retry n (full jitter).
backoff() {
    ceil=$((AMP_BACKOFF_BASE_MS << ($1 - 1)))
    [ "$ceil" -gt "$AMP_BACKOFF_CAP_MS" ] && ceil=$AMP_BACKOFF_CAP_MS
    read -r u </proc/sys/kernel/random/uuid
    ms=$(((0x${u%%-*} & 0x7fffffff) % (ceil + 1)))
    sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
}

# Blind retries: every attempt is a new message, so the server cannot tell
# a retry from a new request. 0 when an attempt got back a completed task.
naive_send() {
    n=0
    while [ "$n" -lt "$AMP_ATTEMPTS" ]; do
        n=$((n + 1))
        [ "$n" -gt 1 ] && backoff $((n - 1))
        read -r mid </proc/sys/kernel/random/uuid
        body='{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":'
        body="$body"'{"messageId":"'"$mid"'","role":"ROLE_USER","parts":[{"text":"'"$2"'"}]}}}'
        # --fail: HTTP errors (503, ...) are retried like transport errors.
        if out=$(curl -sS --fail --max-time "$AMP_TIMEOUT_S" -H 'Content-Type: application/json' \
            -H 'A2A-Version: 1.0' --data-binary "$body" "$1" 2>&1); then
            case $out in
            *'"TASK_STATE_COMPLETED"'*) return 0 ;;
            *) echo "naive send $2: not completed: $out" >&2; return 1 ;;
            esac
        fi
        echo "naive send $2: attempt $n: $out" >&2
    done
    return 1
}

# The side effect, retried like every call; once mode presents the same key
# on every attempt.
effect() {
    n=0
    while [ "$n" -lt "$AMP_ATTEMPTS" ]; do
        n=$((n + 1))
        [ "$n" -gt 1 ] && backoff $((n - 1))
        if [ "$AMP_MODE" = once ]; then
            out=$(curl -sS --fail --max-time "$AMP_TIMEOUT_S" -X POST -H "X-Amplify-Slot: $1" \
                -H "Idempotency-Key: $2" "$AMP_NEXT" 2>&1) && return 0
        else
            out=$(curl -sS --fail --max-time "$AMP_TIMEOUT_S" -X POST -H "X-Amplify-Slot: $1" \
                "$AMP_NEXT" 2>&1) && return 0
        fi
        echo "effect $1: attempt $n: $out" >&2
    done
    return 1
}

# Send with the once CLI: exit 0 once the child completed (its answer is
# logged when it did not).
once_send() {
    out=$("$AMP_ONCE" send --agent "$AMP_NEXT" --id "$1" --text "$2" --wait --json \
        --outbox "$AMP_OUTBOX" --attempts "$AMP_ATTEMPTS" --timeout "${AMP_TIMEOUT_S}s" \
        --deadline 10m --backoff-base "${AMP_BACKOFF_BASE_MS}ms" \
        --backoff-cap "${AMP_BACKOFF_CAP_MS}ms" --budget-ratio 1 --budget-burst 1000 2>&1)
    st=$?
    [ "$st" -eq 0 ] || echo "once send $1: exit $st: $out" >&2
    return "$st"
}

fail() {
    printf '{"status":"failed","text":"%s"}\n' "$1"
    exit 0
}

turn() {
    read -r line
    rest=${line#*\"text\":\"amp }
    label=${rest%%\"*}
    root=${label% p*}
    path=${label#* p}
    case $root$path in *[!A-Za-z0-9]*) fail "not an amplify task: $label" ;; esac
    # A resumed turn (takeover) whose step was done and checkpointed before
    # does not redo it: the step counter has moved on, so its key or child
    # IDs would be new ones (docs/protocol.md section 8).
    if [ "$AMP_MODE" = once ]; then
        case $line in *'"checkpoint":"'*) echo '{"status":"completed"}'; return ;; esac
    fi

    if [ "${#path}" -ge "$AMP_DEPTH" ]; then
        key="${ONCE_EFFECT_KEY_PREFIX}${ONCE_STEP}"
        effect "$root.$path" "$key" || fail "the side effect got no answer"
        [ "$AMP_MODE" = once ] && printf '{"checkpoint":"done","step":%d}\n' $((ONCE_STEP + 1))
        echo '{"status":"completed"}'
        return
    fi

    if [ "$AMP_MODE" = once ]; then
        ids=$("$AMP_IDS" "$ONCE_TASK_ID" "$ONCE_STEP" $((ONCE_STEP + 1))) ||
            fail "cannot derive the child IDs"
        # shellcheck disable=SC2086 # two IDs, split on purpose
        set -- $ids
        once_send "$1" "amp $root p${path}0" &
        c0=$!
        once_send "$2" "amp $root p${path}1" &
        c1=$!
    else
        naive_send "$AMP_NEXT" "amp $root p${path}0" &
        c0=$!
        naive_send "$AMP_NEXT" "amp $root p${path}1" &
        c1=$!
    fi
    wait "$c0"
    s0=$?
    wait "$c1"
    s1=$?
    if [ "$s0" -ne 0 ] || [ "$s1" -ne 0 ]; then
        fail "children ended with status $s0 and $s1"
    fi
    [ "$AMP_MODE" = once ] && printf '{"checkpoint":"delegated","step":%d}\n' $((ONCE_STEP + 2))
    echo '{"status":"completed"}'
}

case $1 in
turn) turn ;;
send) naive_send "$2" "$3" ;;
*) echo "usage: amplify_agent.sh turn | send URL TEXT" >&2; exit 2 ;;
esac
