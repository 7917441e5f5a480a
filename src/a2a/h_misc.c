/*
 * h_misc.c -- the methods answered with a fixed A2A 1.0 refusal (streaming
 * without a backend that follows events, the extended card), and the
 * test-only admin methods. (Push configs: h_push.c, which refuses with
 * -32003 itself when the backend has no push slots.)
 *
 * The refusals agree with the agent card: capabilities.streaming false ->
 * -32004 UnsupportedOperation; extendedAgentCard false -> -32007.
 *
 * Admin methods exist only when onced runs with --test-admin (the table row
 * is hidden otherwise, so they answer -32601 like any unknown name).
 */
#include <string.h>

#include "a2a/a2a_int.h"

int once__a2a_h_streaming(a2a_call *c)
{
    return once__a2a_fail_unsupported(c, ONCE_RPC_UNSUPPORTED_OPERATION, "UNSUPPORTED_OPERATION",
                                      "this agent does not stream (capabilities.streaming is "
                                      "false); use SendMessage and GetTask");
}

int once__a2a_h_extended_card(a2a_call *c)
{
    once__a2a_fail(c, ONCE_RPC_EXTENDED_CARD_NOT_CONFIGURED, "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
               "This agent has no extended agent card (capabilities.extendedAgentCard is "
               "false); the public card is at /.well-known/agent-card.json");
    return ONCE_EINVAL;
}

/* {"offsetMs": N}: move the clock the engine and store read by N ms from
 * real time (replaces any earlier offset). */
int once__a2a_h_admin_clock(a2a_call *c)
{
    a2a_verr e;
    once_offset_clock *clk = once__a2a_clock(c->a);
    const json_t *v = json_object_get(c->params, "offsetMs");
    if (!json_is_integer(v)) {
        once__a2a_verr(&e, "offsetMs", "offsetMs must be an integer (milliseconds)");
        return once__a2a_fail_params(c, &e);
    }
    if (clk == NULL)
        return once__a2a_fail(c, ONCE_RPC_INTERNAL, "INTERNAL", "No adjustable clock configured");
    once_offset_clock_set(clk, (int64_t)json_integer_value(v));
    char now[25];
    once_format_time(once_now(&clk->base), now);
    c->result = json_pack("{s:I, s:s}", "offsetMs", (json_int_t)once_offset_clock_get(clk),
                          "now", now);
    return c->result ? ONCE_OK : ONCE_ENOMEM;
}

/* Method counters and engine counters. */
int once__a2a_h_admin_stats(a2a_call *c)
{
    json_t *r = json_object();
    if (r == NULL)
        return ONCE_ENOMEM;
    once__a2a_add_stats(c->a, r);
    const once__a2a_backend *b = once__a2a_backend_of(c->a);
    if (b->stats != NULL) {
        json_t *eng = json_object();
        if (eng != NULL) {
            b->stats(b->ctx, eng);
            json_object_set_new(r, "engine", eng);
        }
    }
    c->result = r;
    return ONCE_OK;
}
