/*
 * methods.c -- the JSON-RPC method table: every method the server answers,
 * as data (Redis' command table). The dispatcher (a2a.c) looks a name up
 * here; nothing else branches on method names.
 *
 * Flags: LEGACY (0.1) and V03 (0.3) names predate the A2A-Version header
 * and are accepted without it; ADMIN rows exist only when onced runs with --test-admin
 * (otherwise they answer -32601 like any unknown name); NOVERSION rows are
 * our own namespace and skip the version check. OPS rows always exist but
 * answer only the principals --admin-principals names (403 otherwise) and
 * log every call (h_admin.c). STREAM rows answer with a
 * stream and are refused (UNSUPPORTED_OPERATION) before their handler runs
 * when the backend cannot stream.
 *
 * Per-method counters live in the once__a2a handle, indexed by row, so the
 * table itself stays const.
 */
#include "a2a/a2a_int.h"

const a2a_method once__a2a_methods[] = {
    /* A2A 1.0 */
    {"SendMessage", once__a2a_h_send, A2A_M_INLINE},
    {"GetTask", once__a2a_h_get, A2A_M_INLINE},
    {"ListTasks", once__a2a_h_list, 0},
    {"CancelTask", once__a2a_h_cancel, 0},
    {"SendStreamingMessage", once__a2a_h_send_streaming, A2A_M_STREAM},
    {"SubscribeToTask", once__a2a_h_subscribe, A2A_M_STREAM},
    {"CreateTaskPushNotificationConfig", once__a2a_h_push_create, 0},
    {"GetTaskPushNotificationConfig", once__a2a_h_push_get, 0},
    {"ListTaskPushNotificationConfigs", once__a2a_h_push_list, 0},
    {"DeleteTaskPushNotificationConfig", once__a2a_h_push_delete, 0},
    {"GetExtendedAgentCard", once__a2a_h_extended_card, 0},
    /* A2A 0.3: shapes converted at the edge, the 1.0 handlers behind */
    {"message/send", once__a2a_h_v03, A2A_M_V03 | A2A_M_INLINE},
    {"message/stream", once__a2a_h_v03, A2A_M_V03 | A2A_M_STREAM},
    {"tasks/get", once__a2a_h_v03, A2A_M_V03 | A2A_M_INLINE},
    {"tasks/cancel", once__a2a_h_v03, A2A_M_V03},
    {"tasks/resubscribe", once__a2a_h_v03, A2A_M_V03 | A2A_M_STREAM},
    {"tasks/pushNotificationConfig/set", once__a2a_h_v03, A2A_M_V03},
    {"tasks/pushNotificationConfig/get", once__a2a_h_v03, A2A_M_V03},
    {"tasks/pushNotificationConfig/list", once__a2a_h_v03, A2A_M_V03},
    {"tasks/pushNotificationConfig/delete", once__a2a_h_v03, A2A_M_V03},
    {"agent/getAuthenticatedExtendedCard", once__a2a_h_v03, A2A_M_V03},
    /* A2A 0.1 compatibility: the client chooses the task id (its
     * tasks/get and tasks/cancel share 0.3's names and are answered so) */
    {"tasks/send", once__a2a_h_legacy_send, A2A_M_LEGACY},
    /* operator methods: --admin-principals only, audited (h_admin.c) */
    {"once/admin/replicas", once__a2a_h_admin_replicas, A2A_M_OPS | A2A_M_NOVERSION},
    {"once/admin/leases", once__a2a_h_admin_leases, A2A_M_OPS | A2A_M_NOVERSION},
    {"once/admin/releaseLease", once__a2a_h_admin_release, A2A_M_OPS | A2A_M_NOVERSION},
    {"once/admin/cancelTasks", once__a2a_h_admin_cancel, A2A_M_OPS | A2A_M_NOVERSION},
    /* test configuration only */
    {"once/admin/setClockOffset", once__a2a_h_admin_clock, A2A_M_ADMIN | A2A_M_NOVERSION},
    {"once/admin/stats", once__a2a_h_admin_stats, A2A_M_ADMIN | A2A_M_NOVERSION},
};

const size_t once__a2a_nmethods = sizeof once__a2a_methods / sizeof once__a2a_methods[0];
