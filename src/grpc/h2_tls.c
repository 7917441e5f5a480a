/*
 * h2_tls.c -- the gRPC listener's TLS (GnuTLS): the credentials and priority
 * of a server, and per connection its session, handshake (ALPN "h2"
 * required) and record I/O. The one file of the server transport that
 * calls GnuTLS (h2.c keeps the sockets and the loop).
 *
 * Built with -DONCE_TLS=OFF, once__h2_tls_init refuses (a listener with a
 * certificate never starts), so no connection ever has a session and the
 * rest is never reached.
 */
#include <stdio.h>
#include <string.h>

#include "core/tls_priority.h"
#include "grpc/h2_int.h"

#ifdef ONCE_HAVE_TLS
#include <gnutls/abstract.h>

/* GnuTLS asks for the pair at each handshake: the one the server's pick
 * serves now (a reloaded pair serves from the next handshake on). */
static int retrieve(gnutls_session_t tls, const gnutls_datum_t *req_ca, int nreq,
                    const gnutls_pk_algorithm_t *algos, int nalgos, gnutls_pcert_st **pcert,
                    unsigned *n, gnutls_privkey_t *key)
{
    once__h2_conn *c = gnutls_session_get_ptr(tls);
    once__h2 *s = c->loop->srv;
    *pcert = NULL;
    *n = 0;
    *key = NULL;
    s->cfg.pick(s->cfg.pick_arg, pcert, n, key);
    return *n > 0 && *key != NULL ? 0 : -1;
}

int once__h2_tls_init(once__h2 *s, char *err, size_t errlen)
{
    const char *pos = NULL;
    if (gnutls_certificate_allocate_credentials(&s->cred) != 0)
        return ONCE_ENOMEM;
    gnutls_certificate_set_retrieve_function2(s->cred, retrieve);
    if (gnutls_priority_init(&s->prio, s->priority, &pos) != 0) {
        snprintf(err, errlen, "grpc: bad TLS priority string near \"%s\"", pos ? pos : "");
        return ONCE_EINVAL;
    }
    return ONCE_OK;
}

void once__h2_tls_free(once__h2 *s)
{
    if (s->prio)
        gnutls_priority_deinit(s->prio);
    if (s->cred)
        gnutls_certificate_free_credentials(s->cred);
}

int once__h2_tls_setup(once__h2 *s, once__h2_conn *c)
{
    if (gnutls_init(&c->tls, GNUTLS_SERVER | GNUTLS_NONBLOCK) != 0)
        return -1;
    gnutls_session_set_ptr(c->tls, c);
    gnutls_datum_t h2 = {(unsigned char *)"h2", 2};
    if (gnutls_priority_set(c->tls, s->prio) != 0 ||
        gnutls_credentials_set(c->tls, GNUTLS_CRD_CERTIFICATE, s->cred) != 0 ||
        gnutls_alpn_set_protocols(c->tls, &h2, 1, GNUTLS_ALPN_MANDATORY) != 0)
        return -1;
    gnutls_transport_set_int(c->tls, c->fd);
    return 0;
}

int once__h2_tls_handshake(once__h2_conn *c, int *want_write)
{
    int r = gnutls_handshake(c->tls);
    if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED) {
        *want_write = gnutls_record_get_direction(c->tls) == 1;
        return 0;
    }
    if (r < 0)
        return -1;
    gnutls_datum_t p;
    if (gnutls_alpn_get_selected_protocol(c->tls, &p) != 0 || p.size != 2 ||
        memcmp(p.data, "h2", 2) != 0)
        return -1;   /* no h2: refused */
    return 1;
}

ssize_t once__h2_tls_recv(once__h2_conn *c, uint8_t *buf, size_t n)
{
    ssize_t r = gnutls_record_recv(c->tls, buf, n);
    c->again = r > 0 && gnutls_record_check_pending(c->tls) > 0;
    if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED)
        return 0;
    return r > 0 ? r : -1;
}

ssize_t once__h2_tls_send(once__h2_conn *c, const uint8_t *buf, size_t n)
{
    /* A record GnuTLS could not send must be sent again with the same
     * bytes: the size is kept until it goes. */
    if (c->tls_try == 0)
        c->tls_try = n < 16384 ? n : 16384;
    ssize_t r = gnutls_record_send(c->tls, buf, c->tls_try);
    if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED)
        return 0;
    c->tls_try = 0;
    return r > 0 ? r : -1;
}

void once__h2_tls_end(once__h2_conn *c)
{
    if (c->tls)
        gnutls_deinit(c->tls);
    c->tls = NULL;
}

#else /* !ONCE_HAVE_TLS */

int once__h2_tls_init(once__h2 *s, char *err, size_t errlen)
{
    snprintf(err, errlen, "grpc: %s", ONCE_TLS_OFF_MSG);
    return ONCE_EUNSUPPORTED;
}

void once__h2_tls_free(once__h2 *s)
{
}

int once__h2_tls_setup(once__h2 *s, once__h2_conn *c)
{
    return -1;
}

int once__h2_tls_handshake(once__h2_conn *c, int *want_write)
{
    return -1;
}

ssize_t once__h2_tls_recv(once__h2_conn *c, uint8_t *buf, size_t n)
{
    return -1;
}

ssize_t once__h2_tls_send(once__h2_conn *c, const uint8_t *buf, size_t n)
{
    return -1;
}

void once__h2_tls_end(once__h2_conn *c)
{
}

#endif /* ONCE_HAVE_TLS */
