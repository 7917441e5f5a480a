/*
 * v03.h -- A2A 0.3 objects to and from their A2A 1.0 form (not API): what
 * lets onced answer 0.3 clients (src/a2a) and the client and the gateway
 * talk to 0.3 agents (src/client) with one engine and one store behind
 * them, all in the 1.0 form.
 *
 * Pure functions of their input: no I/O; each returns a new reference, or
 * NULL when memory ran out. A member one form has and the other does not
 * is carried where the other form has room for it and dropped otherwise
 * (docs/wire.md, "A2A versions", lists what is lost); members neither
 * form names pass through untouched, so the 1.0 checks that follow an
 * inbound conversion see what the peer wrote and name it. Input that is
 * not an object where one is expected passes through as it is, for the
 * same checks to refuse.
 *
 * The differences handled:
 *   objects    0.3 tags each with "kind" ("task", "message",
 *              "status-update", "artifact-update"); 1.0 wraps a stream
 *              event or a send result in a member named by its type
 *   states     "input-required" <-> TASK_STATE_INPUT_REQUIRED, ...
 *   roles      "user"/"agent" <-> ROLE_USER/ROLE_AGENT
 *   parts      {kind:"text",text} {kind:"file",file:{bytes|uri,name,mimeType}}
 *              {kind:"data",data} <-> {text} {raw|url,filename,mediaType}
 *              {data}; 0.3 data is an object: another 1.0 value goes out as
 *              {"value": v} with metadata.data_part_compat true, and comes
 *              back unwrapped (as @a2a-js/sdk does)
 *   events     a 0.3 status update says "final" (the stream ends there);
 *              1.0 infers it from the state
 *   push       0.3 {taskId, pushNotificationConfig:{id,url,token,
 *              authentication:{schemes[],credentials}}} <-> 1.0 {taskId,id,
 *              url,token,authentication:{scheme,credentials}}
 *   send       configuration.blocking (absent: blocking, as 1.0's default
 *              and the 0.3 Python SDK) <-> returnImmediately;
 *              pushNotificationConfig <-> taskPushNotificationConfig
 */
#ifndef ONCE_CORE_V03_H
#define ONCE_CORE_V03_H

#include <jansson.h>

/* The 0.3 name of a 1.0 state ("input-required"); "unknown" for any other
 * value. And back: the 1.0 name of a 0.3 state, or NULL. */
const char *once__v03_state(const char *state10);
const char *once__v03_state_in(const char *state03);

/* --- 0.3 -> 1.0 --- */
json_t *once__v03_message_in(const json_t *m);
json_t *once__v03_task_in(const json_t *t);
/* A 0.3 Task, Message, status-update or artifact-update as a 1.0
 * StreamResponse ({task|message|statusUpdate|artifactUpdate: ...}); a
 * value without a known kind passes through. */
json_t *once__v03_event_in(const json_t *ev);
/* A 0.3 TaskPushNotificationConfig as the 1.0 one. */
json_t *once__v03_push_in(const json_t *cfg);
/* A 0.3 PushNotificationConfig (no taskId) as a 1.0 TaskPushNotificationConfig. */
json_t *once__v03_push_config_in(const json_t *cfg);
/* message/send params as SendMessage params. */
json_t *once__v03_send_params_in(const json_t *params);

/* --- 1.0 -> 0.3 --- */
json_t *once__v03_message_out(const json_t *m);
json_t *once__v03_task_out(const json_t *t);
/* A 1.0 StreamResponse (or a send result {task}|{message}) as the 0.3
 * object it wraps, tagged with its kind. */
json_t *once__v03_event_out(const json_t *ev);
json_t *once__v03_push_out(const json_t *cfg);
/* SendMessage params as message/send params. */
json_t *once__v03_send_params_out(const json_t *params);
/* A 1.0 agent card as the 0.3 card of its first 0.x interface (url,
 * preferredTransport, additionalInterfaces, protocolVersion "0.3.0",
 * supportsAuthenticatedExtendedCard, flat securitySchemes and security),
 * with its supportedInterfaces kept (as @a2a-js/sdk serves it); NULL when
 * it lists no 0.x interface, or no memory. */
json_t *once__v03_card_out(const json_t *card);

/* A call a client of a 0.3 agent makes (the once client, the gateway): the
 * 1.0 method, its 0.3 name, the conversion of its params (NULL: the same)
 * and of its result (of each event, for the streamed ones). */
typedef struct once__v03_call {
    const char *v10, *v03;
    json_t *(*params_out)(const json_t *);
    json_t *(*result_in)(const json_t *);
} once__v03_call;
/* The call of 1.0 method name, or NULL (none in 0.3: ListTasks). */
const once__v03_call *once__v03_call_of(const char *name);

#endif /* ONCE_CORE_V03_H */
