/*
 * card_file.c -- what an operator may say in the agent card (onced
 * --card FILE): a JSON object with the card's descriptive members, checked
 * against A2A 1.0's AgentCard (a2a.proto) before onced serves anything.
 *
 * The split: the operator describes the agent (name, description,
 * provider, version, documentationUrl, iconUrl, skills, default
 * input/output modes); onced states what the server does (interfaces and
 * their URLs, capabilities, the idempotency extension, security), so a
 * file can never advertise a binding or a capability onced does not have.
 * A member onced owns is refused with that reason rather than ignored: a
 * card that silently differs from its file would mislead whoever wrote it.
 *
 * Every refusal names the field by its JSON path ("skills[1].tags[0]").
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "a2a/a2a_int.h"

/* Members onced writes itself (AgentCard fields, and 0.3 ones a 0.3 card
 * would carry). */
static const char *const owned[] = {
    "supportedInterfaces",
    "capabilities",
    "securitySchemes",
    "securityRequirements",
    "signatures",
    "url",
    "preferredTransport",
    "additionalInterfaces",
    "protocolVersion",
    "security",
    "supportsAuthenticatedExtendedCard",
};

static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return ONCE_EINVAL;
}

static int in(const char *name, const char *const *set, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(name, set[i]) == 0)
            return 1;
    }
    return 0;
}

/* A string; non-empty when need_text. */
static int check_string(const json_t *v, const char *field, int need_text, char *err, size_t errlen)
{
    if (!json_is_string(v))
        return fail(err, errlen, "%s must be a string", field);
    if (need_text && json_string_length(v) == 0)
        return fail(err, errlen, "%s must not be empty", field);
    return ONCE_OK;
}

/* An array of non-empty strings; non-empty itself when need_one. */
static int check_strings(const json_t *v, const char *field, int need_one, char *err, size_t errlen)
{
    if (!json_is_array(v))
        return fail(err, errlen, "%s must be an array of strings", field);
    if (need_one && json_array_size(v) == 0)
        return fail(err, errlen, "%s must not be empty", field);
    size_t i;
    json_t *s;
    json_array_foreach(v, i, s)
    {
        char f[200];
        snprintf(f, sizeof f, "%s[%zu]", field, i);
        if (check_string(s, f, 1, err, errlen) != ONCE_OK)
            return ONCE_EINVAL;
    }
    return ONCE_OK;
}

/* Members of obj must all be in allowed; the required ones present. */
static int check_members(const json_t *obj, const char *field, const char *const *allowed,
                         size_t nallowed, size_t nrequired, char *err, size_t errlen)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v)
    {
        if (!in(key, allowed, nallowed))
            return fail(err, errlen,
                        "%s%s%s: unknown member (allowed: see docs/wire.md, "
                        "\"The agent card\")",
                        field, *field ? "." : "", key);
    }
    for (size_t i = 0; i < nrequired; i++) {
        if (json_object_get(obj, allowed[i]) == NULL)
            return fail(err, errlen, "%s%s%s is required", field, *field ? "." : "", allowed[i]);
    }
    return ONCE_OK;
}

static int check_provider(const json_t *v, char *err, size_t errlen)
{
    static const char *const members[] = {"organization", "url"};
    if (!json_is_object(v))
        return fail(err, errlen, "provider must be an object {organization, url}");
    if (check_members(v, "provider", members, 2, 2, err, errlen) != ONCE_OK ||
        check_string(json_object_get(v, "organization"), "provider.organization", 1, err, errlen) !=
            ONCE_OK ||
        check_string(json_object_get(v, "url"), "provider.url", 1, err, errlen) != ONCE_OK)
        return ONCE_EINVAL;
    return ONCE_OK;
}

/* One AgentSkill: id, name, description, tags required (a2a.proto);
 * examples, inputModes, outputModes optional; securityRequirements is
 * onced's (it owns security). */
static int check_skill(const json_t *v, const char *field, char *err, size_t errlen)
{
    static const char *const members[] = {"id",       "name",       "description", "tags",
                                          "examples", "inputModes", "outputModes"};
    char f[200];
    if (!json_is_object(v))
        return fail(err, errlen, "%s must be an object (an AgentSkill)", field);
    if (json_object_get(v, "securityRequirements") != NULL)
        return fail(err, errlen,
                    "%s.securityRequirements: onced declares security itself "
                    "(--auth-tokens); remove it",
                    field);
    if (check_members(v, field, members, 7, 4, err, errlen) != ONCE_OK)
        return ONCE_EINVAL;
    for (size_t i = 0; i < 3; i++) {
        snprintf(f, sizeof f, "%s.%s", field, members[i]);
        if (check_string(json_object_get(v, members[i]), f, i < 2, err, errlen) != ONCE_OK)
            return ONCE_EINVAL;
    }
    for (size_t i = 3; i < 7; i++) {
        const json_t *m = json_object_get(v, members[i]);
        snprintf(f, sizeof f, "%s.%s", field, members[i]);
        if (m != NULL && check_strings(m, f, i == 3, err, errlen) != ONCE_OK)
            return ONCE_EINVAL;
    }
    return ONCE_OK;
}

static int check_skills(const json_t *v, char *err, size_t errlen)
{
    if (!json_is_array(v) || json_array_size(v) == 0)
        return fail(err, errlen, "skills must be a non-empty array of AgentSkill objects");
    size_t i;
    json_t *s;
    json_array_foreach(v, i, s)
    {
        char f[40];
        snprintf(f, sizeof f, "skills[%zu]", i);
        if (check_skill(s, f, err, errlen) != ONCE_OK)
            return ONCE_EINVAL;
        const char *id = json_string_value(json_object_get(s, "id"));
        for (size_t k = 0; k < i; k++) {
            if (strcmp(id, json_string_value(json_object_get(json_array_get(v, k), "id"))) == 0)
                return fail(err, errlen, "%s.id: \"%s\" is also the id of skills[%zu]", f, id, k);
        }
    }
    return ONCE_OK;
}

static int check_card(const json_t *card, char *err, size_t errlen)
{
    static const char *const members[] = {
        "name",     "description", "version",           "documentationUrl",  "iconUrl",
        "provider", "skills",      "defaultInputModes", "defaultOutputModes"};
    const size_t n = sizeof members / sizeof members[0];
    if (!json_is_object(card))
        return fail(err, errlen, "the card must be a JSON object");
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)card, key, v)
    {
        if (in(key, owned, sizeof owned / sizeof owned[0]))
            return fail(err, errlen,
                        "%s: onced sets this member itself (interfaces, "
                        "capabilities and security follow its flags); remove it",
                        key);
    }
    if (check_members(card, "", members, n, 0, err, errlen) != ONCE_OK)
        return ONCE_EINVAL;
    for (size_t i = 0; i < 5; i++) {
        const json_t *m = json_object_get(card, members[i]);
        if (m != NULL && check_string(m, members[i], i != 1, err, errlen) != ONCE_OK)
            return ONCE_EINVAL;
    }
    const json_t *m;
    if ((m = json_object_get(card, "provider")) != NULL &&
        check_provider(m, err, errlen) != ONCE_OK)
        return ONCE_EINVAL;
    if ((m = json_object_get(card, "skills")) != NULL && check_skills(m, err, errlen) != ONCE_OK)
        return ONCE_EINVAL;
    for (size_t i = 7; i < n; i++) {
        m = json_object_get(card, members[i]);
        if (m != NULL && check_strings(m, members[i], 1, err, errlen) != ONCE_OK)
            return ONCE_EINVAL;
    }
    return ONCE_OK;
}

int once__a2a_card_parse(const char *text, size_t len, json_t **out, char *err, size_t errlen)
{
    *out = NULL;
    char why[200];
    json_t *card = NULL;
    int rc = once__a2a_json_parse(text, len, &card, why, sizeof why);
    if (rc == ONCE_ENOMEM)
        return rc;
    if (rc != ONCE_OK) {
        snprintf(err, errlen, "not JSON: %s", why);
        return ONCE_EPARSE;
    }
    rc = check_card(card, err, errlen);
    if (rc != ONCE_OK) {
        json_decref(card);
        return rc;
    }
    *out = card;
    return ONCE_OK;
}

/* An upstream skill with only the members a card file may give it; tags
 * are required by AgentSkill, so a skill without them gets the gateway's. */
static json_t *upstream_skill(const json_t *sk)
{
    static const char *const keep[] = {"id",       "name",       "description", "tags",
                                       "examples", "inputModes", "outputModes"};
    json_t *out = json_object();
    for (size_t i = 0; out != NULL && i < sizeof keep / sizeof keep[0]; i++) {
        json_t *v = json_object_get(sk, keep[i]);
        if (v != NULL && json_object_set(out, keep[i], v) != 0) {
            json_decref(out);
            return NULL;
        }
    }
    if (out != NULL && json_object_get(out, "tags") == NULL &&
        json_object_set_new(out, "tags", json_pack("[s]", "upstream")) != 0) {
        json_decref(out);
        return NULL;
    }
    return out;
}

int once__a2a_card_from_upstream(const char *text, json_t **out, char *err, size_t errlen)
{
    static const char *const members[] = {
        "name",     "description", "version",           "documentationUrl",  "iconUrl",
        "provider", "skills",      "defaultInputModes", "defaultOutputModes"};
    *out = NULL;
    json_t *up = NULL, *card = json_object();
    int rc = once__a2a_json_parse(text, strlen(text), &up, err, errlen);
    if (rc != ONCE_OK || card == NULL) {
        json_decref(card);
        return card == NULL ? ONCE_ENOMEM : rc;
    }
    for (size_t i = 0; i < sizeof members / sizeof members[0]; i++) {
        json_t *v = json_object_get(up, members[i]);
        if (v == NULL)
            continue;
        if (strcmp(members[i], "skills") == 0) {
            json_t *skills = json_array();
            size_t k;
            json_t *sk;
            json_array_foreach(v, k, sk)
                json_array_append_new(skills, upstream_skill(sk));
            json_object_set_new(card, "skills", skills);
        } else {
            json_object_set(card, members[i], v);
        }
    }
    /* A member the upstream fills in a way a card file may not is left
     * out, not fatal: the gateway serves whatever the upstream describes. */
    for (size_t i = 0; i < sizeof members / sizeof members[0]; i++) {
        if (check_card(card, err, errlen) == ONCE_OK)
            break;
        json_object_del(card, members[sizeof members / sizeof members[0] - 1 - i]);
    }
    rc = check_card(card, err, errlen);
    /* Security is onced's: the upstream's schemes are served as they are
     * unless --auth-tokens replaces them (card.c). */
    const char *sec[] = {"securitySchemes", "securityRequirements"};
    for (size_t i = 0; rc == ONCE_OK && i < 2; i++) {
        json_t *v = json_object_get(up, sec[i]);
        if (v != NULL && json_object_set(card, sec[i], v) != 0)
            rc = ONCE_ENOMEM;
    }
    json_decref(up);
    if (rc != ONCE_OK) {
        json_decref(card);
        return rc;
    }
    *out = card;
    return ONCE_OK;
}
