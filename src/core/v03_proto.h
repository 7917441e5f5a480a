/*
 * v03_proto.h -- A2A 0.3's HTTP+JSON objects to and from their A2A 1.0
 * form (not API): what lets onced answer 0.3 REST clients (src/a2a/rest.c,
 * h_v03.c) with the 1.0 handlers behind them.
 *
 * 0.3's REST binding does not carry the 0.3 JSON-RPC objects (core/v03.h):
 * it carries the JSON mapping of 0.3's a2a.proto (tag v0.3.0), as
 * @a2a-js/sdk's LegacyRestTransport and a2a-python's REST transport read
 * and write it. Every conversion here goes through the 0.3 JSON-RPC form:
 * proto JSON <-> 0.3 JSON-RPC in this file (what the SDK's FromProto and
 * ToProto do), 0.3 JSON-RPC <-> 1.0 in v03.c, so parts, files, data values
 * 0.3 cannot carry, push authentication and blocking are converted in one
 * place only.
 *
 * Pure functions of their input, as v03.h's: no I/O; each returns a new
 * reference, or NULL when memory ran out. Inbound, members the proto form
 * does not name pass through untouched, so the 1.0 checks that follow see
 * what the peer wrote and name it; input that is not an object passes
 * through as it is. Outbound, only the members 0.3's proto defines go out
 * (ProtoJSON readers such as protobuf's json_format refuse unknown fields
 * by default); what is lost is listed in docs/wire.md, "A2A versions".
 *
 * How the three forms differ:
 *              0.3 proto JSON            0.3 JSON-RPC        1.0
 *   tagging    wrapper member: task,     "kind"              wrapper member
 *              message (msg), statusUpdate, artifactUpdate
 *   message    content: [Part]           parts               parts
 *   role       ROLE_USER, ROLE_AGENT     user, agent         ROLE_USER, ...
 *   states     TASK_STATE_CANCELLED      canceled            TASK_STATE_CANCELED
 *              (the others as 1.0)       input-required ...
 *   text       {text}                    {kind,text}         {text}
 *   file       {file:{fileWithUri|       {kind,file:{uri|    {url|raw,
 *              fileWithBytes,mimeType}}  bytes,mimeType,name}} mediaType,filename}
 *   data       {data:{data:{...}}}       {kind,data:{...}}   {data: any value}
 *   push       {name:"tasks/T/push-      {taskId:T,          {taskId,id,url,...,
 *              NotificationConfigs/C",   pushNotification-   authentication:
 *              pushNotificationConfig:   Config:{id:C,...}}  {scheme,...}}
 *              {id:C,url,token,authentication:{schemes,credentials}}}
 *   send       configuration.pushNotification, blocking (absent: false when
 *              a configuration is given, proto3's default) <-> JSON-RPC's
 *              pushNotificationConfig, blocking <-> 1.0's
 *              taskPushNotificationConfig, returnImmediately
 */
#ifndef ONCE_CORE_V03_PROTO_H
#define ONCE_CORE_V03_PROTO_H

#include <jansson.h>

/* --- 0.3 proto JSON -> 1.0 --- */
json_t *once__v03_proto_message_in(const json_t *m);
json_t *once__v03_proto_task_in(const json_t *t);
/* A StreamResponse or SendMessageResponse ({task|message|msg|statusUpdate|
 * artifactUpdate: ...}) as the 1.0 StreamResponse; anything else passes. */
json_t *once__v03_proto_event_in(const json_t *ev);
/* A TaskPushNotificationConfig ({name, pushNotificationConfig}; taskId may
 * come beside it, from the route's path) as the 1.0 one. The task of name
 * becomes taskId; a name that names no task, or another task than taskId,
 * is kept for the 1.0 check to refuse. */
json_t *once__v03_proto_push_in(const json_t *cfg);
/* ListTaskPushNotificationConfigResponse as the 1.0 list result. */
json_t *once__v03_proto_push_list_in(const json_t *list);
/* A SendMessageRequest (its message also under the proto name "request")
 * as SendMessage params. */
json_t *once__v03_proto_send_params_in(const json_t *params);

/* --- 1.0 -> 0.3 proto JSON --- */
json_t *once__v03_proto_message_out(const json_t *m);
json_t *once__v03_proto_task_out(const json_t *t);
/* A 1.0 StreamResponse (or a send result {task}|{message}) as 0.3's
 * StreamResponse (SendMessageResponse: the same members); a status
 * update says "final" as in v03.h. */
json_t *once__v03_proto_event_out(const json_t *ev);
json_t *once__v03_proto_push_out(const json_t *cfg);
/* A 1.0 ListTaskPushNotificationConfigs result as 0.3's
 * ListTaskPushNotificationConfigResponse. */
json_t *once__v03_proto_push_list_out(const json_t *res);
json_t *once__v03_proto_send_params_out(const json_t *params);

#endif /* ONCE_CORE_V03_PROTO_H */
