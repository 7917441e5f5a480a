/*
 * generation.c -- a served object's generation, kept in its metadata under
 * the idempotency extension's URI (generation.h says why).
 */
#include "core/generation.h"

int once__generation_stamp(json_t *obj, int64_t generation)
{
    json_t *meta = json_object_get(obj, "metadata");
    if (!json_is_object(meta)) {
        meta = json_object();
        if (meta == NULL || json_object_set_new(obj, "metadata", meta) != 0)
            return ONCE_ENOMEM;
    }
    json_t *ext = json_pack("{s:I}", "generation", (json_int_t)generation);
    if (ext == NULL || json_object_set_new(meta, ONCE_IDEMPOTENCY_EXTENSION, ext) != 0)
        return ONCE_ENOMEM;
    return ONCE_OK;
}

int64_t once__generation_of(const json_t *obj)
{
    const json_t *ext =
        json_object_get(json_object_get(obj, "metadata"), ONCE_IDEMPOTENCY_EXTENSION);
    const json_t *g = json_object_get(ext, "generation");
    if (!json_is_integer(g) || json_integer_value(g) <= 0)
        return 0;
    return (int64_t)json_integer_value(g);
}
